package run

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// Sessions are the ACP engine's conversations. Every ACP call starts one (session/new) or
// continues one (sessionId: session/load of the CLI's stored history, in a new or warm process),
// and its result carries the id. A session belongs to one tool, isolation and checkout: a call that
// continues it gets the same ones (the record's), and asking for others is an error, never a
// silent switch. On the host the CLI keeps the history in the user's data dir; a container's data
// dir is a private copy per call, so a container session has a host directory of its own
// (DataDir) as the CLI's data dir, at the same path in each of its containers, with the call's
// settings copy mounted over its settings/ (docker.go, sessionMounts) — written by the container,
// so only ever mounted into the next container and read by the host through bridge/acp's os.Root
// (usage).
// ask_cline_workspace keeps its worktree for the session's life in this process (leases); after a
// restart a continued session gets a new worktree of HEAD, with a warning when the commit moved.
// Expire ends idle sessions and releases what they held.

// sessionPlan is a call's session: the continued one's record, the CLI's id after the last
// attempt, and a container session's data dir (fresh: made for this call).
type sessionPlan struct {
	rec   *sessions.Record
	id    string
	data  string
	fresh bool
}

// leases are the worktrees kept for workspace sessions, by session id.
type leases struct {
	mu sync.Mutex
	m  map[string]Worktree
}

func (l *leases) take(id string) Worktree {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.m[id]
	delete(l.m, id)
	return w
}

func (l *leases) put(id string, w Worktree) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]Worktree{}
	}
	l.m[id] = w
}

func (l *leases) all() map[string]Worktree {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.m
	l.m = nil
	return m
}

// planSession applies a continued session's record to the call (tool, cwd, isolation, provider
// and model), or prepares a new container session's data dir. It runs before the call waits.
func (k *call) planSession() *failure {
	st := k.r.cfg.Sessions
	if k.SessionID == "" {
		if k.engine.Sessions() && st != nil && k.iso.Container() {
			dir, err := newDataDir(st.Dir)
			if err != nil {
				return &failure{cline.KindLaunchFailed, "could not create the session's data dir: " + err.Error()}
			}
			k.prep.sess.data, k.prep.sess.fresh = dir, true
		}
		return nil
	}
	if st == nil {
		return &failure{cline.KindLaunchFailed, "this server keeps no sessions (no session store); call without sessionId"}
	}
	rec, err := st.Get(k.SessionID, time.Now())
	if err != nil {
		return &failure{cline.KindLaunchFailed, fmt.Sprintf("cannot continue session %s: %v; start a new conversation without sessionId", k.SessionID, err)}
	}
	if string(k.Tool) != rec.Tool {
		return &failure{cline.KindLaunchFailed, fmt.Sprintf("session %s belongs to %s, not %s: continue it with the same tool", rec.ID, rec.Tool, k.Tool)}
	}
	if k.Cwd != "" && filepath.Clean(k.Cwd) != filepath.Clean(rec.Cwd) {
		return &failure{cline.KindLaunchFailed, fmt.Sprintf("session %s works in %s, not %s: leave cwd out or give the same one", rec.ID, rec.Cwd, k.Cwd)}
	}
	iso := sandbox.Isolation(rec.Isolation)
	if k.Isolation != "" && k.Isolation != iso {
		return &failure{cline.KindLaunchFailed, fmt.Sprintf("session %s runs with isolation %s, not %s: leave isolation out or give the same one", rec.ID, iso, k.Isolation)}
	}
	if !iso.AtLeast(k.r.cfg.Floor) {
		return &failure{cline.KindLaunchFailed, fmt.Sprintf("session %s ran with isolation %s, below this server's floor %s", rec.ID, iso, k.r.cfg.Floor)}
	}
	k.Cwd, k.iso, k.Isolation = rec.Cwd, iso, iso
	if k.Provider == "" {
		k.Provider = rec.Provider
	}
	if k.Model == "" {
		k.Model = rec.Model
	}
	k.prep.sess.data, k.prep.sess.rec = rec.DataDir, &rec
	return nil
}

// adoptDataDir makes the data dir a spare agent brought (spare.go) the new session's: the one
// made for this call was never used.
func (k *call) adoptDataDir(dir string) {
	if k.prep.sess.fresh && k.prep.sess.data != dir {
		_ = os.RemoveAll(k.prep.sess.data)
	}
	k.prep.sess.data, k.prep.sess.fresh = dir, true
}

// recordSession writes the session the call's last attempt ran in (new or continued) and puts its
// id and turn into the result; a fresh container data dir whose session never started is removed.
func (k *call) recordSession(res *Result, id string) {
	st := k.r.cfg.Sessions
	if st == nil || id == "" || k.Tool == ReviewCline { // a review is one turn: nothing to continue
		if k.prep.sess.fresh {
			_ = os.RemoveAll(k.prep.sess.data)
		}
		return
	}
	now := time.Now()
	rec := sessions.Record{ID: id, Tool: string(k.Tool), Isolation: string(k.iso), Cwd: k.Cwd, Dir: k.prep.dir,
		Provider: k.Provider, Model: k.Model, DataDir: k.prep.sess.data, Created: now, Title: title(k.red.Text(k.Prompt))}
	if k.prep.sess.rec != nil && k.prep.sess.rec.ID == id {
		rec.Created, rec.Title, rec.Turns = k.prep.sess.rec.Created, k.prep.sess.rec.Title, k.prep.sess.rec.Turns
	}
	if res.Worktree != nil {
		rec.Commit = res.Worktree.Commit
	}
	rec.Turns++
	rec.LastUsed = now
	if err := st.Put(rec); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the session %s could not be saved (%v): it cannot be continued", id, err))
		return
	}
	res.SessionID, res.Turn = id, rec.Turns
}

// Expire ends the sessions idle longer than the store's idle time: their records go, a kept
// worktree is released and a container session's data dir is removed. cmd/cline-mcp calls it
// periodically.
func (r *Runner) Expire(ctx context.Context) int {
	st := r.cfg.Sessions
	if st == nil {
		return 0
	}
	gone := st.Expire(time.Now())
	for _, rec := range gone {
		r.acp.Forget(rec.ID) // its kept container, before the worktree it has mounted goes
		r.layouts.drop(rec.ID)
		if w := r.leases.take(rec.ID); w != nil {
			if _, err := w.Release(ctx); err != nil {
				r.log.Warn("could not release an expired session's worktree", "session", rec.ID, "err", err)
			}
		}
		if rec.DataDir != "" && git.Within(rec.DataDir, st.Dir) {
			_ = os.RemoveAll(rec.DataDir)
		}
	}
	return len(gone)
}

// Close ends the warm ACP processes and releases the worktrees kept for sessions (the records
// stay: a later server continues them with a new worktree).
func (r *Runner) Close(ctx context.Context) {
	r.acp.Close()
	for id, w := range r.leases.all() {
		if _, err := w.Release(ctx); err != nil {
			r.log.Warn("could not release a session's worktree", "session", id, "err", err)
		}
	}
}

func newDataDir(root string) (string, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	dir := filepath.Join(root, "data", hex.EncodeToString(b))
	return dir, os.MkdirAll(dir, 0o700)
}

// title is the first line of a prompt, at most 80 runes: a session's name in a listing.
func title(prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if r := []rune(line); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return line
}
