package run

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// containerHome is the tmpfs HOME inside the container; nothing of the user's home is mounted.
const containerHome = "/home/cline"

// dockerSpec prepares a container run: an OAuth access token that outlives the run (refreshed on
// the host when needed: settings.EnsureFresh), a least-privilege private copy of Cline's settings
// dir (only the provider the run may use, without its refresh token; the run never sees the host
// file), the workspace mounts of this tool at their host paths, and a tool policy inside the copy.
// The returned cleanup reads the copy back — nothing of it reaches the host file, its credentials
// are dropped with a warning (settings.MergeAllowed) and kept for redaction — then deletes the
// copy, which holds secrets.
func (p *prep) dockerSpec(ctx context.Context, spec *sandbox.Spec, req *cline.Request, a *attempt) (func(), error) {
	if err := p.freshToken(ctx, a); err != nil {
		return nil, err
	}
	dir, release, live, err := p.copyDir(a)
	if err != nil {
		return nil, fmt.Errorf("copy Cline's settings for the container: %w", err)
	}
	cp, err := p.r.cfg.Settings.PrivateCopy(dir, settingsOverride(*p.Call))
	if err != nil {
		release()
		return nil, fmt.Errorf("copy Cline's settings for the container: %w", err)
	}
	a.warn(cp.Warnings...)
	// A copy the session's kept container may go on using stays in the dir its agent owns, which
	// removes it when the container ends (or the attempt when it is not kept).
	cleanup := func() { p.mergeBack(cp, a, !live); release() }
	p.watchCopy(cp) // a token the run refreshes is a secret of the call

	req.DataDir = cp.Dir
	extra := map[string]string{
		"HOME":           containerHome,
		"PATH":           "/usr/local/bin:/usr/bin:/bin",
		"CLINE_DATA_DIR": cp.Dir,
	}
	if p.Tool.Analysis() && !p.r.cfg.SeedPolicy {
		policy, err := p.dockerPolicy(filepath.Join(cp.Dir, "settings"), a)
		if err != nil {
			return cleanup, err
		}
		maps.Copy(extra, policy)
	}
	getenv := envLookup(p.r.cfg.Env)
	for _, name := range p.r.cfg.DockerEnv {
		if v := getenv(name); v != "" {
			extra[name] = v
		}
	}
	// The endpoints come from the settings as the user wrote them, before the key goes out.
	spec.Egress = p.providerEndpoints(cp.SettingsPath, cp.Target, a)
	spec.AllowOnly = p.allowOnly
	if spec.Credential, err = p.keyOutside(cp, extra, a); err != nil {
		return cleanup, err
	}
	mounts, err := p.space.mounts(ctx)
	if err != nil {
		return cleanup, err
	}
	// An engine that copies instead of sharing brings back only providers.json, for the merge.
	spec.Mounts = append(mounts, sandbox.Mount{Source: cp.Dir, Target: cp.Dir,
		Return: sandbox.Return{Files: []string{filepath.ToSlash(strings.TrimPrefix(cp.SettingsPath, cp.Dir+string(filepath.Separator)))}}})
	if p.engine.Sessions() && p.sess.data != "" {
		ms, err := sessionMounts(p.sess.data, cp.Dir)
		if err != nil {
			return cleanup, err
		}
		// The session's CLI reads and writes its settings at the data dir's settings/, a mount of
		// its own: an engine that copies brings providers.json back from there (the copy of the
		// same files under cp.Dir in such a container is one the CLI never sees).
		if rel, err := filepath.Rel(ms[1].Source, cp.SettingsPath); err == nil && filepath.IsLocal(rel) {
			spec.Mounts[len(spec.Mounts)-1].Return = sandbox.Return{}
			ms[1].Return = sandbox.Return{Files: []string{filepath.ToSlash(rel)}}
		}
		spec.Mounts = append(spec.Mounts, ms...)
		extra["CLINE_DATA_DIR"] = p.sess.data
		spec.NotWarm = true // a warm container never has a session's data dir (warmSlot)
	}
	spec.Tmpfs = []sandbox.Tmpfs{{Target: "/tmp", SizeMB: 512}, {Target: containerHome, SizeMB: 256}}
	spec.Path = p.r.cfg.DockerCline
	a.provider = p.engine.Env(cp.SettingsPath, p.Provider, extra, p.red)
	spec.Args = p.engine.Argv(*req)
	spec.Env = cline.Env(nil, extra)
	spec.Dir = p.dir
	spec.Labels = map[string]string{"cline-mcp.tool": string(p.Tool)}
	if live {
		a.shape = shapeOf(*spec, cp.Dir, p.sess.data, a.placeholder)
		a.spare = p.spareMaker(a, spec, cp)
	}
	return cleanup, nil
}

// warmSlots is an executor that keeps started containers ready (sandbox/docker WithWarm).
type warmSlots interface {
	WarmSlot() (dir string, release func())
}

// warmSlot is where the call's settings copy goes: the slot of a warm container when the
// executor has one ready (the container then runs the call; sandbox/docker), else the call's
// private dir. release removes the slot once the copy was read back; a container session's
// calls never take one (their data dir is mounted too, which no warm container has).
func (p *prep) warmSlot() (string, func()) {
	if w, ok := p.r.cfg.Docker.(warmSlots); ok && !(p.engine.Sessions() && p.sess.data != "") {
		if dir, release := w.WarmSlot(); dir != "" {
			return dir, release
		}
	}
	return p.private, func() {}
}

// sessionMounts make a container session's own data dir (session.go) the CLI's data dir: the CLI
// records its sessions there by absolute path, so the path must be the same in every container of
// the session. The call's settings copy is mounted over its settings/ (the CLI reads providers.json
// there; the merge-back reads the copy as for any container). What the container writes in the
// data dir is only ever mounted into the session's next container and read by the host for usage,
// through os.Root.
func sessionMounts(data, copyDir string) ([]sandbox.Mount, error) {
	// An earlier container of the session may have left something else there (a link, a FIFO):
	// removed, never followed, before the settings copy is mounted at that path.
	target := filepath.Join(data, "settings")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("the session's data dir: %w", err)
	}
	if fi, err := os.Lstat(target); err == nil && !fi.IsDir() {
		_ = os.Remove(target)
	}
	if err := os.Mkdir(target, 0o700); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("the session's data dir: %w", err)
	}
	return []sandbox.Mount{
		{Source: data, Target: data, Return: sandbox.Return{Tree: true}},
		{Source: filepath.Join(copyDir, "settings"), Target: filepath.Join(data, "settings")},
	}, nil
}

// freshToken makes the OAuth access token of the run's provider outlive the run's time limit
// before the container gets a copy without the refresh token. The new tokens of a host refresh are
// learned secrets of the call; a refresh that fails is launch_failed naming the provider and the fix.
func (p *prep) freshToken(ctx context.Context, a *attempt) error {
	until := time.Now().Add(time.Duration(p.TimeoutSeconds) * time.Second)
	// A container retry of a default host call refreshes under this call's own shared hold (p.hold),
	// which would block the exclusive one.
	f, err := p.r.cfg.Settings.EnsureFresh(ctx, settingsOverride(*p.Call), until, p.hold)
	// The host wrote these itself (trusted): learned whole, before the container starts, so its
	// progress and tails are redacted of them too.
	p.red.Learn(f.Secrets...)
	a.warn(f.Warnings...)
	if f.Refreshed != "" {
		p.progress(fmt.Sprintf("refreshed the OAuth token of %s on the host for the container", f.Refreshed))
	}
	return err
}
