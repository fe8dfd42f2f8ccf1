package run

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// Live container sessions. A container turn (Docker or a Kubernetes pod) of a conversation of
// ask_cline or ask_cline_workspace (liveSession) keeps its container and its ACP process for the
// session's next turn, until the warm agents' idle time (--warm-idle) ends it, the session
// expires, or the server stops; the next turn then costs what a warm host turn costs. What
// outlives the call lives in a directory the kept process owns (ownDir: its settings copy, with
// the tool policy inside), tracked by the lifeline like a call's private dir and removed when the
// container ends. The container is keyed by the session id and its shape (shapeOf), so no other
// session, tool or spec ever gets it; a later turn whose spec differs (the repository's policy
// narrowed the egress, a new key) starts a new container. What the host reads after each turn is
// read as for any container: usage from the session's data dir and the settings copy, through
// os.Root, never following a link. A pod's mounts are copies (and a Docker copy-mode container's):
// the executor brings them back after each turn (sandbox.Syncer), through the checks of the copy
// back at the container's end.
//
// A key-less run's container is kept when the egress proxy (a pod's sidecar) can settle its grant
// (bridge/run/engine): after the turn the proxy counts the turn and lends the key to nothing until
// the next turn re-arms it with that call's credential and allowance.
//
// Not kept (a container per turn, as before): apply_cline_edits (a process a turn left behind could
// change the checkout after the call's diff was taken). A Docker copy-mode container comes back
// between turns like a pod (sandbox.Syncer).

// layouts are the repository layouts (git.Repo; nil: not in one) of ask_cline's live sessions,
// recorded by the turn that kept the container: the next turn's mounts, and so its shape, use it
// while the container is still kept instead of asking git again (a process per turn; most of what
// a later Docker turn costs beyond a host one). The layout is the host's own reading of the user's
// repository; at worst it is as old as the kept container, whose mounts it describes.
type layouts struct {
	mu sync.Mutex
	m  map[string]*git.Repo
}

func (l *layouts) put(session string, r *git.Repo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*git.Repo{}
	}
	l.m[session] = r
}

func (l *layouts) get(session string) (*git.Repo, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.m[session]
	return r, ok
}

func (l *layouts) drop(session string) {
	l.mu.Lock()
	delete(l.m, session)
	l.mu.Unlock()
}

// liveLayout is the layout a call continuing session may use: the one its last turn recorded,
// while that turn's container is kept.
func (r *Runner) liveLayout(session string) func() (*git.Repo, bool) {
	return func() (*git.Repo, bool) {
		if session == "" || !r.acp.Holds(session) {
			return nil, false
		}
		return r.layouts.get(session)
	}
}

// ownDir makes a directory the attempt's process may take over when it is kept (bridge/run/engine
// Owned), tracked by the lifeline; the attempt removes it when the process is not kept.
func (p *prep) ownDir(a *attempt) (string, error) {
	own, err := os.MkdirTemp(p.r.cfg.TempDir, "cline-mcp-agent-")
	if err != nil {
		return "", err
	}
	a.own.Dir = own
	if p.r.cfg.TrackDir != nil {
		a.own.Untrack = p.r.cfg.TrackDir(own)
	}
	return own, nil
}

// copyDir is where a container attempt's settings copy goes: the dir the process owns when its
// container may be kept (live), else a warm container's slot or the call's private dir
// (warmSlot).
func (p *prep) copyDir(a *attempt) (dir string, release func(), live bool, err error) {
	if p.keepAs(a.iso) == "" {
		dir, release = p.warmSlot()
		return dir, release, false, nil
	}
	own, err := p.ownDir(a)
	if err != nil {
		return "", nil, false, err
	}
	return own, func() {}, true, nil
}

// shapeOf is the fingerprint of a container spec without the call's own settings-copy dir,
// session data dir and key placeholder: executable, arguments, environment, directory, mounts,
// tmpfs, labels, user, egress and the credential the egress proxy lends (its key hashed with the
// rest). Two turns of a session with the same shape may share a container, and a spare agent
// (spare.go) made from one call's spec has the shape of the next such call.
func shapeOf(spec sandbox.Spec, copyDir, dataDir, placeholder string) string {
	pairs := []string{copyDir, "\x00copy"}
	if dataDir != "" {
		pairs = append(pairs, dataDir, "\x00data")
	}
	if placeholder != "" {
		pairs = append(pairs, placeholder, "\x00key")
	}
	own := strings.NewReplacer(pairs...).Replace
	var b strings.Builder
	field := func(parts ...string) {
		for _, s := range parts {
			s = own(s)
			fmt.Fprintf(&b, "%d:%s;", len(s), s)
		}
		b.WriteByte('\n')
	}
	field(spec.Path, spec.Dir, spec.User)
	field(spec.Args...)
	env := slices.Clone(spec.Env)
	slices.Sort(env)
	field(env...)
	for _, m := range spec.Mounts {
		field(m.Source, m.Target, fmt.Sprint(m.ReadOnly), fmt.Sprint(m.Return.Tree), strings.Join(m.Return.Files, "\x00"))
	}
	for _, t := range spec.Tmpfs {
		field(t.Target, fmt.Sprint(t.SizeMB))
	}
	labels := make([]string, 0, len(spec.Labels))
	for k, v := range spec.Labels {
		labels = append(labels, k+"="+v)
	}
	slices.Sort(labels)
	field(labels...)
	field(spec.Egress...)
	if spec.AllowOnly != nil {
		field(append([]string{"allow-only"}, *spec.AllowOnly...)...)
	}
	if c := spec.Credential; c != nil {
		field("credential", c.Upstream, c.BasePath, fmt.Sprintf("%+v", c.Allowance))
		field(c.Endpoints...)
		headers := make([]string, 0, len(c.Headers))
		for k, v := range c.Headers {
			headers = append(headers, k+"="+v)
		}
		slices.Sort(headers)
		field(headers...)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
