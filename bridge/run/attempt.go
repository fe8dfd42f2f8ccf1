package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/run/engine"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// attempt is what one execution of the CLI produced.
type attempt struct {
	n          int
	iso        sandbox.Isolation
	deadline   time.Time // the call's (timeoutSeconds after the first attempt started)
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
	// credNote says why a container attempt's provider credential was inside it (keyOutside);
	// placeholder is what stands in for the key when it stayed outside.
	credNote    string
	placeholder string
	// provider is the ACP engine's provider block of the attempt (id, key, model), read from the
	// providers.json the attempt runs with before its process started; never read again.
	provider engine.Provider
	// the ACP engine: the session the attempt ran in, and the tool calls the policy rejected
	sessionID string
	rejected  []Rejection
	// written: the attempt could have changed files — it ran in a container (where analysis keeps
	// run_commands) or reported a successful mutating tool call.
	written bool
	// own is a directory for the policy files of a process that may be kept, with the
	// lifeline's untrack; the engine hands it to the process, else the attempt removes it.
	own engine.Owned
	// shape is a Docker turn's fingerprint when its container may be kept for the session's next
	// turn (livesession.go), else "".
	shape string
	// spare makes the spare agents of a Docker conversation's first turn (spare.go), or nil.
	spare func(sandbox.Spec) (engine.Spare, error)
}

func (a *attempt) warn(w ...string) { a.warnings = append(a.warnings, w...) }

// withSettings runs the attempts under the settings discipline of the call. A default host run
// works on the user's providers.json itself (the CLI's own token refreshes land there directly);
// afterwards Run.End puts back what the CLI's invalid-entry wipe lost. A run with a provider/model
// override, and every container, works on a private copy made per attempt (hostSpec, dockerSpec),
// so the user's file never carries an override, not even for a moment, and a crash cannot leave one
// behind; refreshed credentials are merged back afterwards. Overrides exclude nothing: only a
// merge-back that has a refreshed token to write waits for this server's default runs in flight
// (settings.Store.Begin). It also says whether an attempt may have written files (attempts).
func (k *call) withSettings(ctx context.Context) (Result, bool) {
	if k.iso.Container() || k.Override() {
		return k.attempts(ctx)
	}
	sr, warns, err := k.r.cfg.Settings.Begin(ctx)
	if err != nil {
		return k.fail(cline.KindCancelled, "the call was cancelled while it waited for a merge of refreshed credentials into providers.json", false), false
	}
	k.prep.hold = sr
	k.warnings = append(k.warnings, warns...)
	res, written := k.attempts(ctx)
	// The hold ends on every path, whatever became of the call: on its own bound, not the call's.
	ectx, cancel := epilogue(context.Background())
	defer cancel()
	res.Warnings = append(res.Warnings, k.r.cfg.Settings.End(ectx, sr)...)
	return res, written
}

// retryMinLeft is the least time of the call that must be left, after the backoff, for a retry
// to start: less would only start a CLI to stop it.
const retryMinLeft = 5 * time.Second

// StopGraceTotal is the most a call returns after its deadline (timeoutSeconds after its first
// attempt started) with the default --stop-grace of 1 s: the ACP engine's cancel and stdin close
// (bridge/run/engine: 1 s and 0.5 s), the executor's polite stop and kill, and the container's
// removal.
// A longer --stop-grace adds the difference. docs/behaviour.md states it.
const StopGraceTotal = 5 * time.Second

// attempts is the seed's retry policy within the call's time: one retry with a 2–3 s cancellable
// backoff for transient errors and cline_updating, only when at least retryMinLeft of the call's
// timeoutSeconds is left after the backoff (else the first attempt's verdict, with a warning); a
// timeout used the call's whole time, so it is never retried. Every attempt ends at the call's
// deadline: one that does not stop on the polite stop is killed. It also says whether any attempt
// may have written files (attempt.written), for the workspace's epilogue.
func (k *call) attempts(ctx context.Context) (_ Result, written bool) {
	iso := k.iso
	deadline := time.Now().Add(time.Duration(k.TimeoutSeconds) * time.Second)
	var a attempt
	for n := 1; ; n++ {
		a = k.attempt(ctx, iso, n, deadline)
		written = written || a.written
		k.warnings = append(k.warnings, a.warnings...)
		if a.sessionID != "" {
			k.prep.sess.id = a.sessionID
		}
		k.res.Rejected = append(k.res.Rejected, a.rejected...)
		k.res.Attempts = n
		k.res.AttemptIsolation = append(k.res.AttemptIsolation, iso)
		k.res.Isolation = iso
		k.res.Enforcement = a.enforcement
		if a.verdict.OK || n >= 2 || ctx.Err() != nil || !cline.ShouldRetry(a.verdict, k.TimeoutSeconds) {
			break
		}
		if why := k.prep.space.retry(ctx, a); why != "" {
			k.warnings = append(k.warnings, "not retried: "+why)
			break
		}
		wait := k.r.cfg.Backoff()
		if left := time.Until(deadline) - wait; left < retryMinLeft {
			k.warnings = append(k.warnings, fmt.Sprintf("not retried: %.1f s of the call's %d s (timeoutSeconds) would be left after the backoff, and a retry needs %d s",
				max(left, 0).Seconds(), k.TimeoutSeconds, int(retryMinLeft/time.Second)))
			break
		}
		k.progress(fmt.Sprintf("attempt %d failed (%s); retrying in %.1f s", n, a.verdict.Kind, wait.Seconds()))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			k.fillFrom(a)
			return k.fail(cline.KindCancelled, fmt.Sprintf("the call was cancelled while waiting to retry after %s: %s", a.verdict.Kind, a.verdict.Message), false), written
		case <-t.C:
		}
		if ri := k.r.cfg.RetryIsolation; ri != "" && ri.AtLeast(iso) {
			iso = ri
		}
	}
	return k.finish(a), written
}

// stoppedAtDeadline is the warning of an attempt the call's deadline stopped: when, and whether it
// had to be killed.
func (a *attempt) stoppedAtDeadline(timeoutSeconds int) {
	if a.verdict.Kind != cline.KindTimeout {
		return
	}
	how := "stopped"
	if a.exit.Signal == "SIGKILL" {
		how = "killed (SIGKILL): it did not stop on the polite stop"
	}
	a.verdict.Warnings = append(a.verdict.Warnings, fmt.Sprintf("attempt %d was %s at the call's deadline (timeoutSeconds %d); it had ended %.1f s after the deadline",
		a.n, how, timeoutSeconds, max(time.Since(a.deadline), 0).Seconds()))
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
func (k *call) attempt(ctx context.Context, iso sandbox.Isolation, n int, deadline time.Time) (a attempt) {
	a = attempt{n: n, iso: iso, deadline: deadline}
	defer a.own.Release()
	req := cline.Request{
		Prompt: k.prep.jsonPrompt(iso), SystemPrompt: k.SystemPrompt, Cwd: k.prep.dir, Thinking: k.Thinking,
		Provider: k.Provider, Model: k.Model, AutoApprove: !(k.Tool.Analysis() && k.r.cfg.SeedPolicy),
	}
	spec := sandbox.Spec{StopGrace: k.r.cfg.StopGrace, SettleGrace: k.r.cfg.SettleGrace}
	var exec sandbox.Executor
	var after func()
	var err error
	if iso.Container() {
		exec = k.r.cfg.Docker
		after, err = k.prep.dockerSpec(ctx, &spec, &req, &a)
	} else {
		exec = k.r.cfg.Host
		after, err = k.prep.hostSpec(&spec, &req, &a)
	}
	if after != nil {
		defer after()
	}
	if err != nil {
		a.verdict = k.startVerdict(err, iso, ctx.Err() != nil, false)
		return a
	}
	if exec == nil {
		a.verdict = cline.Verdict{Kind: cline.KindLaunchFailed, Message: "Docker isolation is unavailable: " + errText(k.r.cfg.DockerErr)}
		return a
	}

	k.progress(fmt.Sprintf("attempt %d: starting Cline (%s)", n, iso))
	f := k.engine.Run(ctx, k.turn(&a, exec, spec))
	a.stdoutTail, a.stderrTail, a.sessionID, a.rejected = f.StdoutTail, f.StderrTail, f.SessionID, f.Rejected
	a.ran, a.exit, a.toolCalls, a.verdict = f.Ran, f.Exit, f.ToolCalls, f.Verdict
	a.warn(f.Warnings...)
	a.written = f.MayHaveWritten
	if f.DataDir != "" {
		k.adoptDataDir(f.DataDir)
	}
	if f.Kept && iso.Container() {
		k.r.layouts.put(f.SessionID, k.prep.space.record())
		k.progress(fmt.Sprintf("attempt %d: the container is kept for this session's next turn", n))
	}
	if f.Err != nil {
		a.verdict = k.budget.Verdict(k.startVerdict(f.Err, iso, ctx.Err() != nil, f.Deadline))
	}
	copyBack := f.CopyBack
	a.enforcement = k.prep.enforcementOf(iso, spec, a.exit, a.credNote)
	if !a.ran {
		return a
	}
	a.verdict = k.budget.proxyVerdict(a.verdict, a.exit.Egress) // what the egress proxy refused at the spend limits
	a.stoppedAtDeadline(k.TimeoutSeconds)
	if iso.Container() {
		a.warn(k.prep.egressWarnings(a.exit)...)
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
// it. A cancel meanwhile (cancelled) is cancelled; the call's time running out (deadline) is a
// timeout; anything else is launchVerdict's.
func (k *call) startVerdict(err error, iso sandbox.Isolation, cancelled, deadline bool) cline.Verdict {
	switch {
	case cancelled:
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
func allowedTools(seed bool, iso sandbox.Isolation) []string {
	if seed {
		return nil
	}
	return cline.AnalysisTools(iso.Container())
}

// onEvent turns live stream events into short, redacted progress messages. Text is redacted
// before it is cut to a snippet, so a cut never leaves half a secret unrecognised: answers at the
// precise level (like the result's text), error events at the diagnostic level.
func (k *call) onEvent(n int, ev cline.Event) {
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
