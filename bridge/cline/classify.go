package cline

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind is the machine-readable failure kind of the seed ("Error Kinds").
type Kind string

// The seed's kinds. Classify produces the first eight; the workspace and git kinds belong to the
// callers that manage worktrees and inspect checkouts, and are listed here so there is one
// vocabulary.
const (
	KindNonZeroExit            Kind = "non_zero_exit"
	KindTransientProviderError Kind = "transient_provider_error"
	KindTimeout                Kind = "timeout"
	KindClineUpdating          Kind = "cline_updating"
	KindCancelled              Kind = "cancelled"
	KindLaunchFailed           Kind = "launch_failed"
	KindMalformedJSON          Kind = "malformed_json"
	KindMissingFinalResult     Kind = "missing_final_result"
	KindWorkspaceNotGit        Kind = "workspace_not_git"
	KindWorkspaceSetupFailed   Kind = "workspace_setup_failed"
	KindWorkspaceCleanupFailed Kind = "workspace_cleanup_failed"
	KindCommitCreated          Kind = "commit_created"
	KindEditsInspectionFailed  Kind = "edits_inspection_failed"
	// KindBudgetExceeded: the call's spend limit (maxCostUsd, maxIterations) stopped the run;
	// the bridge decides it from the live usage, not Classify.
	KindBudgetExceeded Kind = "budget_exceeded"
	// KindRateLimited: the HTTP service refused the call at once because the caller's tenant is
	// at its limit of concurrent runs and queued calls (or background jobs); retry after
	// retryAfterSeconds.
	KindRateLimited Kind = "rate_limited"
)

// Kinds lists every Kind, in the seed's order.
var Kinds = []Kind{
	KindNonZeroExit, KindTransientProviderError, KindTimeout, KindClineUpdating, KindCancelled,
	KindLaunchFailed, KindMalformedJSON, KindMissingFinalResult, KindWorkspaceNotGit,
	KindWorkspaceSetupFailed, KindWorkspaceCleanupFailed, KindCommitCreated, KindEditsInspectionFailed,
	KindBudgetExceeded, KindRateLimited,
}

// UpdatingMessage is the seed's message for KindClineUpdating.
const UpdatingMessage = "Cline CLI is missing or being updated; retry in ~30 s"

// Outcome is everything known about one finished attempt.
type Outcome struct {
	ExitCode  int    // -1 when ended by a signal
	Signal    string // "SIGKILL" etc. when ended by a signal, else ""
	TimedOut  bool   // the bridge stopped the run at its deadline
	Cancelled bool   // the bridge stopped the run because the client cancelled
	// TimeoutSeconds is the configured limit, Elapsed the actual wall time.
	TimeoutSeconds int
	Elapsed        time.Duration
	Stdout         Summary
	Stderr         StderrSummary
	// OOMKilled: the container engine killed the run for exceeding its memory limit.
	OOMKilled bool
	// Analysis marks an analysis run (ask_cline, ask_cline_workspace, review_cline): a successful call of a
	// tool outside Allowed (the run's allow-list, AnalysisTools) is then reported as a warning,
	// on success and on failure alike. With Allowed nil (the seed policy) only mutating tools
	// are reported.
	Analysis bool
	Allowed  []string
}

// Verdict is the classification of an Outcome. On success Kind is "" and Text is the answer;
// on failure Message says what went wrong in plain text (ANSI stripped, not yet redacted).
type Verdict struct {
	OK       bool
	Text     string
	Warnings []string
	Model    string // model id, when the CLI reported it
	Provider string // provider id, when the CLI reported it
	Usage    *Usage

	Kind       Kind
	Message    string
	Transient  bool   // worth one automatic retry (see ShouldRetry)
	ErrorClass string // the CLI's errorClass of the fatal error: auth, context_window_exceeded, unknown
}

// Classify decides how an attempt ended. The order of the rules matters:
//
//  1. Cancelled by the client: cancelled, even when a completed result arrived just before the
//     cancel, because the client asked for the call to end and no longer waits for its answer.
//  2. A completed result (run_result finishReason "completed", or agent_event done "completed"
//     without a later run_result) is a success, whatever the exit: a non-zero exit, an external
//     signal, or our own deadline after the answer was complete add a warning (seed: "Success
//     Despite Non-Zero Exit or External Signal").
//  3. Timed out (stopped at our deadline): timeout, naming the limit and the elapsed time.
//  4. run_result finishReason "error", whatever the exit code (seed: "Clean Exit 0 Provider
//     Errors"): transient_provider_error when IsTransient, else non_zero_exit with the message
//     and a hint for auth and context-window errors.
//  5. Stderr says the CLI's modules are missing: cline_updating.
//  6. run_result/done "aborted" not caused by us (the mistake limit after repeated denied tool
//     calls, b_denied_tools_mistake_limit, or an outside SIGTERM): non_zero_exit naming the
//     denied tools.
//  7. Killed for memory (OOMKilled) or by a signal: non_zero_exit ("cline was terminated by
//     SIGKILL").
//  8. Exit 0 without a terminal result: malformed_json when stdout had a non-JSON line, else
//     missing_final_result (an outside SIGINT looks like this: f_sigint_midrun).
//  9. Any other non-zero exit: the extracted error message, transient or not.
//
// Analysis runs get a warning per tool outside the run's allow-list that succeeded (a call with
// at least one operation that did not fail), on success and failure alike: a mutating one may
// have changed files; any other one was offered although the policy meant to keep it off (a
// tool a newer CLI added, or one of a source the CLI cannot switch off).
func Classify(o Outcome) Verdict {
	v := classify(o)
	if o.Analysis {
		for _, t := range o.Stdout.Successes {
			switch {
			case slices.Contains(o.Allowed, t.Name):
			case IsMutatingTool(t.Name):
				v.Warnings = append(v.Warnings, fmt.Sprintf(
					"Cline reported a successful %s call during a read-only analysis run; check the working tree", t.Name))
			case o.Allowed != nil:
				v.Warnings = append(v.Warnings, fmt.Sprintf(
					"Cline ran %s, a tool outside the analysis allow-list (%s): the CLI offered it although cline-mcp's tool policy switches it off", t.Name, strings.Join(o.Allowed, ", ")))
			}
		}
	}
	if n := o.Stdout.OversizeLines; n > 0 && v.OK {
		v.Warnings = append(v.Warnings, fmt.Sprintf("%d stdout line(s) longer than %d MiB were skipped", n, MaxLineBytes>>20))
	}
	return v
}

func classify(o Outcome) Verdict {
	s := o.Stdout
	if o.Cancelled {
		return fail(KindCancelled, fmt.Sprintf("the request was cancelled by the client (after %.1f s)", o.Elapsed.Seconds()))
	}
	if v, ok := completed(o); ok {
		return v
	}
	if o.TimedOut {
		msg := fmt.Sprintf("Cline did not finish within the %d s limit (stopped after %.1f s)", o.TimeoutSeconds, o.Elapsed.Seconds())
		if last := lastActivity(s); last != "" {
			msg += "; last activity: " + last
		}
		return fail(KindTimeout, msg)
	}
	if s.Result != nil && s.Result.FinishReason == "error" {
		msg, class := errorMessage(o)
		return providerFailure(msg, class)
	}
	if o.Stderr.ModuleNotFound {
		v := fail(KindClineUpdating, UpdatingMessage)
		v.Transient = true
		return v
	}
	if aborted(s) {
		return fail(KindNonZeroExit, abortMessage(o))
	}
	if s.Result != nil && s.Result.FinishReason != "" {
		msg := fmt.Sprintf("Cline ended the run with finishReason %q", s.Result.FinishReason)
		if m, _ := errorMessage(o); m != "" {
			msg += ": " + m
		}
		return fail(KindNonZeroExit, msg)
	}
	if o.OOMKilled {
		return fail(KindNonZeroExit, "cline was killed for exceeding the container's memory limit (raise the Docker memory limit)")
	}
	if o.Signal != "" {
		msg := "cline was terminated by " + o.Signal
		if m, _ := errorMessage(o); m != "" {
			msg += ": " + m
		}
		return fail(KindNonZeroExit, msg)
	}
	if o.ExitCode == 0 {
		if s.NonJSONLines > 0 {
			return fail(KindMalformedJSON, fmt.Sprintf(
				"cline exited with code 0 but printed %d non-JSON line(s) on stdout in --json mode (first: %q)",
				s.NonJSONLines, s.NonJSONSample))
		}
		return fail(KindMissingFinalResult, missingMessage(s))
	}
	msg, class := errorMessage(o)
	if msg == "" {
		msg = fmt.Sprintf("cline exited with code %d", o.ExitCode)
		if n := len(o.Stderr.OtherLines); n > 0 {
			msg += "; last stderr line: " + o.Stderr.OtherLines[n-1]
		}
		return fail(KindNonZeroExit, msg)
	}
	return providerFailure(msg, class)
}

func fail(k Kind, msg string) Verdict {
	return Verdict{Kind: k, Message: msg}
}

// completed returns the success verdict when the stream holds a completed result.
func completed(o Outcome) (Verdict, bool) {
	s := o.Stdout
	var v Verdict
	switch {
	case s.Result != nil:
		if s.Result.FinishReason != "completed" {
			return v, false
		}
		v.Text = s.Result.Text
		if s.Result.Truncated > 0 {
			v.Text += truncationNote(s.Result.Truncated)
		}
		if s.Result.Model != nil {
			v.Model, v.Provider = s.Result.Model.ID, s.Result.Model.Provider
		}
		v.Usage = firstUsage(s.Result.AggregateUsage, s.Result.Usage)
		if v.Text == "" && s.Done != nil && s.Done.Text != "" {
			v.Text = s.Done.Text
		}
		if s.Result.Truncated > 0 {
			v.Warnings = append(v.Warnings, fmt.Sprintf("the answer was truncated to %d bytes (%d bytes omitted)", MaxTextBytes, s.Result.Truncated))
		}
	case s.Done != nil && s.Done.Reason == "completed":
		v.Text = s.Done.Text
		if s.Done.Truncated > 0 {
			v.Text += truncationNote(s.Done.Truncated)
			v.Warnings = append(v.Warnings, fmt.Sprintf("the answer was truncated to %d bytes (%d bytes omitted)", MaxTextBytes, s.Done.Truncated))
		}
		v.Usage = firstUsage(s.Done.Usage)
		v.Warnings = append(v.Warnings, "cline reported a completed result but no run_result line")
	default:
		return v, false
	}
	v.OK = true
	if v.Text == "" {
		v.Text = s.LastText
	}
	if v.Usage == nil {
		v.Usage = cloneUsage(s.Usage)
	}
	switch {
	case o.TimedOut:
		v.Warnings = append(v.Warnings, fmt.Sprintf("cline did not exit after a completed result and was stopped at the %d s limit", o.TimeoutSeconds))
	case o.Signal != "":
		v.Warnings = append(v.Warnings, "cline was terminated by "+o.Signal+" after a completed result")
	case o.ExitCode != 0:
		w := fmt.Sprintf("cline exited with code %d after a completed result", o.ExitCode)
		if m := firstNonEmpty(o.Stderr.Message(), lastTop(s)); m != "" {
			w += ": " + m
		}
		v.Warnings = append(v.Warnings, w)
	}
	return v, true
}

func firstUsage(us ...*Usage) *Usage {
	for _, u := range us {
		if u != nil {
			return cloneUsage(u)
		}
	}
	return nil
}

func aborted(s Summary) bool {
	if s.Result != nil {
		return s.Result.FinishReason == "aborted"
	}
	return s.Done != nil && s.Done.Reason == "aborted"
}

// abortMessage explains an abort we did not cause. The CLI prints no reason for the mistake
// limit (it shows as external_abort "aborted by another client"), so the denied tools in the
// stream are the explanation.
func abortMessage(o Outcome) string {
	s := o.Stdout
	var msg string
	if len(s.FailedTools) > 0 {
		parts := make([]string, len(s.FailedTools))
		for i, t := range s.FailedTools {
			parts[i] = fmt.Sprintf("%s ×%d", t.Name, t.Count)
		}
		msg = "Cline aborted the run after repeated denied or failed tool calls: " + strings.Join(parts, ", ")
		if s.LastToolError != "" {
			msg += " (last error: " + capTo(s.LastToolError, 200) + ")"
		}
	} else {
		msg = "Cline aborted the run"
		if s.Aborted != nil {
			msg += fmt.Sprintf(" (%s: %s)", s.Aborted.Reason, s.Aborted.Message)
		}
	}
	if o.Signal != "" {
		msg += "; cline was terminated by " + o.Signal
	} else if o.ExitCode != 0 {
		msg += fmt.Sprintf("; cline exited with code %d", o.ExitCode)
		if m := o.Stderr.Message(); m != "" {
			msg += ": " + m
		}
	}
	return msg
}

// errorMessage extracts the most specific error message and its errorClass: run_result.text of
// a failed run, a JSON error line on stderr or stdout, an `error:` line on stderr, the last
// unrecoverable agent error.
func errorMessage(o Outcome) (string, string) {
	s := o.Stdout
	class := ""
	var agent string
	for i := len(s.Errors) - 1; i >= 0; i-- {
		if !s.Errors[i].Recoverable {
			agent, class = s.Errors[i].Message, s.Errors[i].ErrorClass
			break
		}
	}
	var result string
	if s.Result != nil && s.Result.FinishReason == "error" {
		result = s.Result.Text
	}
	msg := firstNonEmpty(result, lastOf(o.Stderr.JSONErrors), lastTop(s), lastOf(o.Stderr.TextErrors), agent)
	return strings.TrimSpace(stripANSI(msg)), class
}

// providerFailure classifies an extracted error message.
func providerFailure(msg, class string) Verdict {
	if msg == "" {
		msg = "Cline reported an error without a message"
	}
	if IsTransient(msg) {
		v := fail(KindTransientProviderError, msg)
		v.Transient, v.ErrorClass = true, class
		return v
	}
	v := fail(KindNonZeroExit, msg+hint(msg, class))
	v.ErrorClass = class
	return v
}

func missingMessage(s Summary) string {
	msg := fmt.Sprintf("cline exited with code 0 without a final result (%d JSON line(s)", s.JSONLines)
	if s.LastEvent != "" {
		msg += ", last: " + s.LastEvent
	}
	msg += ")"
	if s.OversizeLines > 0 {
		msg += fmt.Sprintf("; %d stdout line(s) longer than %d MiB were skipped and may have held it", s.OversizeLines, MaxLineBytes>>20)
	}
	return msg
}

func lastActivity(s Summary) string {
	if s.Lines == 0 {
		return "no output from cline"
	}
	parts := []string{}
	if s.Iteration > 0 {
		parts = append(parts, fmt.Sprintf("iteration %d", s.Iteration))
	}
	if n := len(s.Tools); n > 0 {
		parts = append(parts, fmt.Sprintf("%d tool call(s)", s.ToolCalls))
	}
	if s.LastEvent != "" {
		parts = append(parts, "last event "+s.LastEvent)
	}
	return strings.Join(parts, ", ")
}

func lastTop(s Summary) string { return lastOf(s.TopErrors) }

func lastOf(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[len(list)-1]
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}
