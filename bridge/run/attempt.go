package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// attempt is what one execution of the CLI produced.
type attempt struct {
	n          int
	iso        sandbox.Isolation
	verdict    cline.Verdict
	exit       sandbox.Exit
	ran        bool // the process started
	toolCalls  int
	stdoutTail string
	stderrTail string
	// enforcement is what the attempt had enforced (nil when it failed before its executor).
	enforcement *Enforcement
	// warnings are this attempt's: its settings copy, tool policy, network and merge-back.
	warnings []string
	// credNote says why a container attempt's provider credential was inside it (keyOutside).
	credNote string
	// providers is the providers.json the attempt runs with (the ACP engine reads its provider).
	providers string
	// the ACP engine: the session the attempt ran in, and the tool calls the policy rejected
	sessionID   string
	rejected    []Rejection
	usageBefore *cline.Usage
	// own is a directory for the policy files of a process that may be kept (agents.go), with the
	// lifeline's untrack; the engine hands it to the process, else the attempt removes it.
	own        string
	untrackOwn func()
}

// dropOwn removes the attempt's own directory when no kept process took it.
func (a *attempt) dropOwn() {
	if a.own != "" {
		_ = os.RemoveAll(a.own)
		a.own = ""
	}
	if a.untrackOwn != nil {
		a.untrackOwn()
		a.untrackOwn = nil
	}
}

func (a *attempt) warn(w ...string) { a.warnings = append(a.warnings, w...) }

// withSettings runs the attempts under the settings discipline of the call. A default host run
// works on the user's providers.json itself (the CLI's own token refreshes land there directly);
// afterwards Run.End puts back what the CLI's invalid-entry wipe lost. A run with a provider/model
// override, and every container, works on a private copy made per attempt (hostSpec, dockerSpec),
// so the user's file never carries an override, not even for a moment, and a crash cannot leave one
// behind; refreshed credentials are merged back afterwards. Overrides exclude nothing: only a
// merge-back that has a refreshed token to write waits for this server's default runs in flight
// (settings.Store.Begin).
func (k *call) withSettings(ctx context.Context) Result {
	if k.iso.Container() || k.Override() {
		return k.attempts(ctx)
	}
	sr, warns, err := k.r.cfg.Settings.Begin(ctx)
	if err != nil {
		return k.fail(cline.KindCancelled, "the call was cancelled while it waited for a merge of refreshed credentials into providers.json", false)
	}
	k.hold = sr
	k.warnings = append(k.warnings, warns...)
	res := k.attempts(ctx)
	ectx, cancel := epilogue(ctx)
	defer cancel()
	res.Warnings = append(res.Warnings, k.r.cfg.Settings.End(ectx, sr)...)
	return res
}

// attempts is the seed's retry policy: one retry with a 2–3 s cancellable backoff for transient
// errors and cline_updating; a timeout is retried only when timeoutSeconds <= 120; nothing else.
func (k *call) attempts(ctx context.Context) Result {
	iso := k.iso
	var a attempt
	for n := 1; ; n++ {
		a = k.attempt(ctx, iso, n)
		k.warnings = append(k.warnings, a.warnings...)
		if a.sessionID != "" {
			k.sessionID = a.sessionID
		}
		k.res.Rejected = append(k.res.Rejected, a.rejected...)
		k.res.Attempts = n
		k.res.AttemptIsolation = append(k.res.AttemptIsolation, iso)
		k.res.Isolation = iso
		k.res.Enforcement = a.enforcement
		if a.verdict.OK || n >= 2 || ctx.Err() != nil || !cline.ShouldRetry(a.verdict, k.TimeoutSeconds) {
			break
		}
		if why := k.space.retry(ctx, a); why != "" {
			k.warnings = append(k.warnings, "not retried: "+why)
			break
		}
		wait := k.r.cfg.Backoff()
		k.progress(fmt.Sprintf("attempt %d failed (%s); retrying in %.1f s", n, a.verdict.Kind, wait.Seconds()))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			k.fillFrom(a)
			return k.fail(cline.KindCancelled, fmt.Sprintf("the call was cancelled while waiting to retry after %s: %s", a.verdict.Kind, a.verdict.Message), false)
		case <-t.C:
		}
		if ri := k.r.cfg.RetryIsolation; ri != "" && ri.AtLeast(iso) {
			iso = ri
		}
	}
	return k.finish(a)
}

// fillFrom copies the process facts of an attempt into the result.
func (k *call) fillFrom(a attempt) {
	k.res.StdoutTail, k.res.StderrTail = a.stdoutTail, a.stderrTail
	k.res.ExitCode, k.res.Signal = nil, nil
	if a.ran {
		if a.exit.Code >= 0 {
			code := a.exit.Code
			k.res.ExitCode = &code
		}
		if a.exit.Signal != "" {
			sig := a.exit.Signal
			k.res.Signal = &sig
		}
	}
}

func (k *call) finish(a attempt) Result {
	k.fillFrom(a)
	v := a.verdict
	k.warnings = append(k.warnings, v.Warnings...)
	if v.OK {
		res := k.res
		res.OK = true
		res.Text = v.Text
		res.Model = v.Model
		if v.Usage != nil {
			u := *v.Usage
			res.Usage = &u
		}
		return res
	}
	retryable := v.Kind == cline.KindTransientProviderError || v.Kind == cline.KindClineUpdating || v.Kind == cline.KindTimeout
	return k.fail(v.Kind, v.Message, retryable)
}

// attempt runs the CLI once in the given isolation and classifies the outcome: the call prepares
// the spec (settings copy, tool policy, mounts), the engine runs it and reads what the CLI said.
//
// The result is named: the settings copy's cleanup (merge-back) runs deferred and adds its
// warnings to it.
func (k *call) attempt(ctx context.Context, iso sandbox.Isolation, n int) (a attempt) {
	a = attempt{n: n, iso: iso}
	defer a.dropOwn()
	req := cline.Request{
		Prompt: k.Prompt, SystemPrompt: k.SystemPrompt, Cwd: k.dir, Thinking: k.Thinking,
		Provider: k.Provider, Model: k.Model, AutoApprove: !(k.Tool.Analysis() && k.r.cfg.SeedPolicy),
	}
	spec := sandbox.Spec{StopGrace: k.r.cfg.StopGrace, SettleGrace: k.r.cfg.SettleGrace}
	var exec sandbox.Executor
	var after func()
	var err error
	if iso.Container() {
		exec = k.r.cfg.Docker
		after, err = k.dockerSpec(ctx, &spec, &req, &a)
	} else {
		exec = k.r.cfg.Host
		after, err = k.hostSpec(ctx, &spec, &req, &a)
	}
	if after != nil {
		defer after()
	}
	if err != nil {
		a.verdict = k.startVerdict(ctx, err, iso, false)
		return a
	}
	if exec == nil {
		a.verdict = cline.Verdict{Kind: cline.KindLaunchFailed, Message: "Docker isolation is unavailable: " + errText(k.r.cfg.DockerErr)}
		return a
	}

	k.progress(fmt.Sprintf("attempt %d: starting Cline (%s)", n, iso))
	copyBack := k.engine.run(ctx, k, &a, exec, spec)
	a.enforcement = k.enforcementOf(iso, spec, a.exit, a.credNote)
	if !a.ran {
		return a
	}
	if iso.Container() {
		a.warn(k.egressWarnings(a.exit)...)
	}
	if a.exit.StreamsCut {
		a.verdict.Warnings = append(a.verdict.Warnings, "a process left behind by Cline kept its output open after it exited; the bridge closed the streams 500 ms after exit and settled with what it had")
	}
	if copyBack != nil {
		msg := "Cline ran in the container, but what it changed could not be brought back (" + copyBack.Error() + "); nothing was written to the host"
		if k.Tool == ApplyClineEdits {
			a.verdict = cline.Verdict{Kind: cline.KindEditsInspectionFailed, Message: msg}
		} else {
			a.verdict.Warnings = append(a.verdict.Warnings, msg)
		}
	}
	return a
}

// startVerdict maps an error before the CLI ran: preparing the attempt, or the executor starting
// it. A cancel meanwhile is cancelled; the attempt's own time limit running out (deadline) is a
// timeout; anything else is launchVerdict's.
func (k *call) startVerdict(ctx context.Context, err error, iso sandbox.Isolation, deadline bool) cline.Verdict {
	switch {
	case ctx.Err() != nil:
		// Preparing the attempt, or creating its container, ended by a cancel.
		return cline.Verdict{Kind: cline.KindCancelled, Message: "the call was cancelled before Cline started: " + err.Error()}
	case deadline:
		return cline.Verdict{Kind: cline.KindTimeout,
			Message: fmt.Sprintf("Cline could not be started within the %d s limit: %v", k.TimeoutSeconds, err)}
	default:
		return launchVerdict(err, iso)
	}
}

// launchVerdict maps a failure to start. On the host, a missing executable that was found a
// moment ago is the CLI being updated (npm replaces files in place), which is worth one retry.
// An image never changes under a run: there a missing executable (a wrong --docker-cline, an
// image without the CLI) is launch_failed with the fix, never retried.
func launchVerdict(err error, iso sandbox.Isolation) cline.Verdict {
	updating := cline.Verdict{Kind: cline.KindClineUpdating, Message: "Cline CLI is missing or being updated; retry in ~30 s (" + err.Error() + ")", Transient: true}
	var le *sandbox.LaunchError
	if errors.As(err, &le) && le.Missing && le.Op != "image inspect" && !iso.Container() {
		return updating
	}
	var nf *notFoundError
	if errors.As(err, &nf) && nf.updating {
		return updating
	}
	return cline.Verdict{Kind: cline.KindLaunchFailed, Message: err.Error()}
}

// allowedTools is the allow-list of the run's analysis policy (cline.Outcome.Allowed); nil for
// the seed policy, which denies every tool.
func (k *call) allowedTools(iso sandbox.Isolation) []string {
	if k.r.cfg.SeedPolicy {
		return nil
	}
	return cline.AnalysisTools(iso.Container())
}

// hostSpec fills the spec for a run on this machine. A run with a provider/model override gets a
// private copy of the settings (settings.HostCopy) as CLINE_PROVIDER_SETTINGS_PATH; the returned
// cleanup merges refreshed credentials back (settings.MergeAllowed) and deletes the copy.
func (k *call) hostSpec(ctx context.Context, spec *sandbox.Spec, req *cline.Request, a *attempt) (func(), error) {
	path, err := k.r.cfg.ClinePath()
	if err != nil {
		return nil, err
	}
	extra := map[string]string{}
	if k.Tool.Analysis() && !k.r.cfg.SeedPolicy {
		if extra, err = k.hostPolicy(ctx, a); err != nil {
			return nil, err
		}
		if w := k.r.versionWarning(path); w != "" && !k.versionWarned {
			k.versionWarned = true
			a.warn(w)
		}
	}
	if k.r.cfg.Instance != "" {
		extra[sandbox.InstanceEnv] = k.r.cfg.Instance
	}
	var cleanup func()
	if k.Override() {
		// After the policy: its CLINE_DATA_DIR points at the user's data dir; this variable
		// wins over it for providers.json alone.
		cp, err := k.r.cfg.Settings.HostCopy(k.private, settingsOverride(k.Call))
		if err != nil {
			return nil, fmt.Errorf("copy Cline's settings for the override: %w", err)
		}
		a.warn(cp.Warnings...)
		cleanup = func() { k.mergeBack(ctx, cp, a) }
		extra["CLINE_PROVIDER_SETTINGS_PATH"] = cp.SettingsPath
		// The CLI on this machine refreshes its token in the copy.
		k.watchCopy(cp)
	}
	providers := k.r.cfg.Settings.File()
	if v, ok := extra["CLINE_PROVIDER_SETTINGS_PATH"]; ok {
		providers = v
	}
	k.engine.env(k, a, providers, extra)
	spec.Path = path
	spec.Args = k.engine.argv(*req)
	spec.Env = cline.Env(k.r.cfg.Env, extra)
	spec.Dir = k.dir
	return cleanup, nil
}

// mergeBack brings the refreshed credentials of a host run's private copy home (a container's copy
// brings none), learns the credential values the copy held, and deletes the copy, which holds keys.
// It runs on every path, on a ctx a cancel does not end: a refreshed token is the user's, whatever
// became of the call. A container retry of a default host call merges under this call's own hold.
func (k *call) mergeBack(ctx context.Context, cp *settings.Copy, a *attempt) {
	st := k.r.cfg.Settings
	// Whatever credential the copy holds now is a secret of this call, merged back or not.
	if b, err := st.ReadBack(cp); err == nil {
		k.red.learnJSON(b, true)
	}
	ectx, cancel := epilogue(ctx)
	defer cancel()
	a.warn(st.MergeAllowed(ectx, cp, k.hold)...)
	if err := st.Discard(cp); err != nil {
		a.warn(fmt.Sprintf("could not delete the private settings copy %s: %v", cp.Dir, err))
	}
}

// watchCopy makes the call's redactor watch a private copy's providers.json: a token the run
// refreshes in it is a secret of the call.
func (k *call) watchCopy(cp *settings.Copy) {
	k.red.watch(cp.SettingsPath, func() ([]byte, error) { return k.r.cfg.Settings.ReadBack(cp) })
}

// onEvent turns live stream events into short, redacted progress messages. Text is redacted
// before it is cut to a snippet, so a cut never leaves half a secret unrecognised: answers at the
// precise level (like the result's text), error events at the diagnostic level.
func (k *call) onEvent(a *attempt, ev cline.Event) {
	n := a.n
	k.budget.observe(ev)
	if ev.Text != "" {
		k.red.refresh(false) // a token refreshed during the run, before Cline prints it
	}
	msg := k.red.Text(ev.Progress())
	switch {
	case ev.Type == "agent_event" && ev.EventType == "content_end" && ev.ContentType == "text" && ev.Text != "":
		msg = "answer: " + snippet(k.red.Text(ev.Text), 100)
	case ev.Type == "agent_event" && ev.EventType == "error":
		msg = "error: " + snippet(k.red.String(ev.Text), 120)
	case ev.Type == "run_result" && ev.Text != "":
		// The throttle keeps only the latest message, so the last one carries the answer too.
		msg += ": " + snippet(k.red.Text(ev.Text), 100)
	}
	if msg == "" {
		return
	}
	if n > 1 {
		msg = fmt.Sprintf("attempt %d: %s", n, msg)
	}
	k.progress(msg + k.budget.note())
}

// snippet is the first n runes of s on one line.
func snippet(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}
