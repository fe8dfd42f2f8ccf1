package acp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// Classify turns one turn into the seed's verdict through cline.Classify, so both engines share
// one set of rules and messages. base carries what only the caller knows (the process's exit
// when it ended, stderr, TimeoutSeconds, Analysis and Allowed); Classify fills Stdout,
// Cancelled, TimedOut. The mapping:
//   - end_turn (and max_tokens, with a warning): success with the turn's text;
//   - a provider failure (a JSON-RPC error of session/prompt, docs/acp.md §8): the provider's message,
//     transient_provider_error when cline.IsTransient (429, 5xx, overload), else non_zero_exit
//     with bridge/cline's hint; -32000 is classified as an auth failure;
//   - cancelled although we did not cancel (Cline's abort after repeated rejected calls, docs/acp.md §5):
//     non_zero_exit naming the rejected tools;
//   - the turn's ctx ended: cancelled or timeout;
//   - the connection lost without an answer: the process's exit decides (base), as for --json;
//   - any other stopReason: non_zero_exit naming it.
//
// Every rejected call becomes a warning of a successful verdict, and stays listed in Turn.Rejected.
func Classify(t Turn, err error, base cline.Outcome) cline.Verdict {
	o := base
	o.Stdout = t.Tools
	o.Stdout.Iteration = t.Iterations
	o.Cancelled = o.Cancelled || t.Cancelled
	o.TimedOut = o.TimedOut || t.TimedOut
	var re *RPCError
	switch {
	case errors.As(err, &re):
		msg := re.ProviderMessage()
		o.Stdout.Result = &cline.Result{FinishReason: "error", Text: msg}
		if re.Auth() {
			o.Stdout.Errors = []cline.AgentError{{Message: msg, ErrorClass: "auth"}}
		}
	case err != nil:
		o.Stdout.LastEvent = "acp: " + err.Error()
	case t.StopReason == "end_turn" || t.StopReason == "max_tokens":
		o.Stdout.Result = &cline.Result{FinishReason: "completed", Text: t.Text, Truncated: t.Truncated, Iterations: t.Iterations}
	case t.StopReason == "cancelled":
		o.Stdout.Result = &cline.Result{FinishReason: "aborted", Iterations: t.Iterations}
	default:
		o.Stdout.Result = &cline.Result{FinishReason: t.StopReason, Iterations: t.Iterations}
	}
	v := cline.Classify(o)
	if err != nil && !v.OK && errors.Is(err, ErrUnresponsive) {
		v.Message += " (" + err.Error() + ")"
	}
	if v.OK {
		if t.StopReason == "max_tokens" {
			v.Warnings = append(v.Warnings, "the model stopped at its output token limit: the answer may be cut")
		}
		for _, r := range t.Rejected {
			v.Warnings = append(v.Warnings, RejectionNote(r))
		}
	}
	return v
}

// RejectionNote is one line for a result: which call was rejected and why.
func RejectionNote(r Rejection) string {
	what := orUnknown(r.Tool)
	if r.Title != "" {
		what = strings.TrimSpace(capTo(r.Title, 160))
	}
	return fmt.Sprintf("cline-mcp rejected a tool call before it ran: %s (%s)", what, r.Reason)
}
