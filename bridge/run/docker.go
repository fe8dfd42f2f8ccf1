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
func (k *call) dockerSpec(ctx context.Context, spec *sandbox.Spec, req *cline.Request, a *attempt) (func(), error) {
	if err := k.freshToken(ctx, a); err != nil {
		return nil, err
	}
	cp, err := k.r.cfg.Settings.PrivateCopy(k.private, settingsOverride(k.Call))
	if err != nil {
		return nil, fmt.Errorf("copy Cline's settings for the container: %w", err)
	}
	a.warn(cp.Warnings...)
	cleanup := func() { k.mergeBack(ctx, cp, a) }
	k.watchCopy(cp) // a token the run refreshes is a secret of the call

	req.DataDir = cp.Dir
	extra := map[string]string{
		"HOME":           containerHome,
		"PATH":           "/usr/local/bin:/usr/bin:/bin",
		"CLINE_DATA_DIR": cp.Dir,
	}
	if k.Tool.Analysis() && !k.r.cfg.SeedPolicy {
		policy, err := k.dockerPolicy(ctx, filepath.Join(cp.Dir, "settings"), a)
		if err != nil {
			return cleanup, err
		}
		maps.Copy(extra, policy)
	}
	getenv := envLookup(k.r.cfg.Env)
	for _, name := range k.r.cfg.DockerEnv {
		if v := getenv(name); v != "" {
			extra[name] = v
		}
	}
	// The endpoints come from the settings as the user wrote them, before the key goes out.
	spec.Egress = k.providerEndpoints(cp.SettingsPath, cp.Target, a)
	if spec.Credential, err = k.keyOutside(cp, extra, a); err != nil {
		return cleanup, err
	}
	mounts, err := k.space.mounts(ctx)
	if err != nil {
		return cleanup, err
	}
	// An engine that copies instead of sharing brings back only providers.json, for the merge.
	spec.Mounts = append(mounts, sandbox.Mount{Source: cp.Dir, Target: cp.Dir,
		Return: sandbox.Return{Files: []string{filepath.ToSlash(strings.TrimPrefix(cp.SettingsPath, cp.Dir+string(filepath.Separator)))}}})
	if k.engine.sessions() && k.sessData != "" {
		ms, err := sessionMounts(k.sessData, cp.Dir)
		if err != nil {
			return cleanup, err
		}
		spec.Mounts = append(spec.Mounts, ms...)
		extra["CLINE_DATA_DIR"] = k.sessData
	}
	spec.Tmpfs = []sandbox.Tmpfs{{Target: "/tmp", SizeMB: 512}, {Target: containerHome, SizeMB: 256}}
	spec.Path = k.r.cfg.DockerCline
	k.engine.env(k, a, cp.SettingsPath, extra)
	spec.Args = k.engine.argv(*req)
	spec.Env = cline.Env(nil, extra)
	spec.Dir = k.dir
	spec.Labels = map[string]string{"cline-mcp.tool": string(k.Tool)}
	return cleanup, nil
}

// sessionMounts make a container session's own data dir (session.go) the CLI's data dir: the CLI
// records its sessions there by absolute path, so the path must be the same in every container of
// the session. The call's settings copy is mounted over its settings/ (the CLI reads providers.json
// there; the merge-back reads the copy as for any container). What the container writes in the
// data dir is only ever mounted into the session's next container and read by the host for usage,
// through os.Root.
func sessionMounts(data, copyDir string) ([]sandbox.Mount, error) {
	if err := os.MkdirAll(filepath.Join(data, "settings"), 0o700); err != nil {
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
func (k *call) freshToken(ctx context.Context, a *attempt) error {
	until := time.Now().Add(time.Duration(k.TimeoutSeconds) * time.Second)
	// A container retry of a default host call refreshes under this call's own shared hold (k.hold),
	// which would block the exclusive one.
	f, err := k.r.cfg.Settings.EnsureFresh(ctx, settingsOverride(k.Call), until, k.hold)
	// The host wrote these itself (trusted): learned whole, before the container starts, so its
	// progress and tails are redacted of them too.
	k.red.Learn(f.Secrets...)
	a.warn(f.Warnings...)
	if f.Refreshed != "" {
		k.progress(fmt.Sprintf("refreshed the OAuth token of %s on the host for the container", f.Refreshed))
	}
	return err
}
