package run

import (
	"context"
	"fmt"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/run/engine"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// prep is what a call's attempts are prepared with, and how each attempt's spec is made of it:
// the workspace and the directory Cline runs in, the settings discipline (the call's private dir,
// a default host run's hold on the user's file, the copies and their merge-back: here), the
// session (session.go), the tool policy (policy.go), a container's settings copy, mounts, egress
// and credential (docker.go, egress.go, keyless.go), the prompt and permission policy of a turn
// (ask.go, engine.go) and the enforcement report (enforcement.go). The call runs the flow; prep
// knows how to build.
type prep struct {
	*Call    // the call as planned (a continued session's tool, cwd, provider and model)
	r        *Runner
	red      *secrets
	engine   engine.Engine
	budget   *budget
	progress Progress
	space    workspace     // the tool's workspace (space.go)
	dir      string        // where Cline runs (cwd, checkout root's cwd, or the worktree)
	private  string        // private 0700 temp dir of this call (global settings, copies)
	hold     *settings.Run // a default host run's shared hold on the settings (nil: none)
	sess     sessionPlan   // the ACP engine's session (session.go)
	// allowOnly is the part of --egress-allow the repository's policy keeps (nil: all of it).
	allowOnly *[]string
	warned    warned
	caller    caller // the user to ask, the steer queue (ask.go)
}

// warned are the warnings given once per call (policy.go, egress.go).
type warned struct{ userCode, textLink, version, open bool }

// hostSpec fills the spec for a run on this machine. A run with a provider/model override gets a
// private copy of the settings (settings.HostCopy) as CLINE_PROVIDER_SETTINGS_PATH; the returned
// cleanup merges refreshed credentials back (settings.MergeAllowed) and deletes the copy.
func (p *prep) hostSpec(spec *sandbox.Spec, req *cline.Request, a *attempt) (func(), error) {
	path, err := p.r.cfg.ClinePath()
	if err != nil {
		return nil, err
	}
	extra := map[string]string{}
	if p.Tool.Analysis() && !p.r.cfg.SeedPolicy {
		if extra, err = p.hostPolicy(a); err != nil {
			return nil, err
		}
		if w := p.r.versionWarning(path); w != "" && !p.warned.version {
			p.warned.version = true
			a.warn(w)
		}
	}
	if p.r.cfg.Instance != "" {
		extra[sandbox.InstanceEnv] = p.r.cfg.Instance
	}
	var cleanup func()
	if p.Override() {
		// After the policy: its CLINE_DATA_DIR points at the user's data dir; this variable
		// wins over it for providers.json alone.
		cp, err := p.r.cfg.Settings.HostCopy(p.private, settingsOverride(*p.Call))
		if err != nil {
			return nil, fmt.Errorf("copy Cline's settings for the override: %w", err)
		}
		a.warn(cp.Warnings...)
		cleanup = func() { p.mergeBack(cp, a, true) }
		extra["CLINE_PROVIDER_SETTINGS_PATH"] = cp.SettingsPath
		// The CLI on this machine refreshes its token in the copy.
		p.watchCopy(cp)
	}
	providers := p.r.cfg.Settings.File()
	if v, ok := extra["CLINE_PROVIDER_SETTINGS_PATH"]; ok {
		providers = v
	}
	a.provider = p.engine.Env(providers, p.Provider, extra, p.red)
	spec.Path = path
	spec.Args = p.engine.Argv(*req)
	spec.Env = cline.Env(p.r.cfg.Env, extra)
	spec.Dir = p.dir
	return cleanup, nil
}

// mergeBack brings the refreshed credentials of a host run's private copy home (a container's copy
// brings none), learns the credential values the copy held, and deletes the copy, which holds keys
// (discard; else its owner does: a live session's kept container, livesession.go).
// It runs on every path and belongs to no call's lifetime: a refreshed token is the user's, whatever
// became of the call, so only its own bound (epilogueTimeout) ends it. A container retry of a
// default host call merges under this call's own hold.
func (p *prep) mergeBack(cp *settings.Copy, a *attempt, discard bool) {
	st := p.r.cfg.Settings
	// Whatever credential the copy holds now is a secret of this call, merged back or not.
	if b, err := st.ReadBack(cp); err == nil {
		p.red.learnJSON(b, true)
	}
	ectx, cancel := epilogue(context.Background())
	defer cancel()
	a.warn(st.MergeAllowed(ectx, cp, p.hold)...)
	if !discard {
		return
	}
	if err := st.Discard(cp); err != nil {
		a.warn(fmt.Sprintf("could not delete the private settings copy %s: %v", cp.Dir, err))
	}
}

// watchCopy makes the call's redactor watch a private copy's providers.json: a token the run
// refreshes in it is a secret of the call.
func (p *prep) watchCopy(cp *settings.Copy) {
	p.red.watch(cp.SettingsPath, func() ([]byte, error) { return p.r.cfg.Settings.ReadBack(cp) })
}
