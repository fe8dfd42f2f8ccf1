package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// budgetCall runs ask_cline with a progress token and returns the result, its structured content
// and the progress messages of the call.
func budgetCall(t *testing.T, e *env, token string, args map[string]any) (map[string]any, string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, ok := args["cwd"]; !ok {
		args["cwd"] = e.work
	}
	res, err := e.sess.CallErr(ctx, "ask_cline", args, token)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, n := range e.sess.Notifications("notifications/progress") {
		if n.Params.AdditionalFields["progressToken"] == token {
			m, _ := n.Params.AdditionalFields["message"].(string)
			msgs = append(msgs, m)
		}
	}
	return mcpsession.Structured(t, res), mcpsession.Text(res), msgs
}

// wantBudgetExceeded checks a result that a spend limit ended: kind, not retried, and the
// message with what was spent; and that the CLI ran no further than allowed.
func wantBudgetExceeded(t *testing.T, sc map[string]any, text string, msgParts ...string) {
	t.Helper()
	if sc["ok"] != false || sc["kind"] != "budget_exceeded" {
		t.Fatalf("got ok=%v kind=%v message=%v, want budget_exceeded", sc["ok"], sc["kind"], sc["message"])
	}
	if sc["attempts"] != float64(1) || sc["retryable"] != false {
		t.Errorf("attempts %v retryable %v: a spend limit is not retried", sc["attempts"], sc["retryable"])
	}
	msg, _ := sc["message"].(string)
	for _, p := range msgParts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q lacks %q", msg, p)
		}
	}
	if !strings.HasPrefix(text, "Kind: budget_exceeded\n") {
		t.Errorf("text %q, want the Kind line first", text)
	}
}

// TestSpendLimits: a run that goes on (a tool loop at $0.01 per model call) is stopped by the
// call's maxCostUsd as soon as a usage event reaches it, and by maxIterations when the next
// iteration starts; the result is budget_exceeded with what was spent; progress carries the
// running cost; the server's --max-cost-usd is the default and the most a call may ask for. The
// fake CLI records how many model calls it made, so a limit that never acted fails here.
func TestSpendLimits(t *testing.T) {
	e := newEnv(t, "--max-cost-usd", "0.05")
	loop := "Go fake:tool_loop?cost_per_call=0.01&delay_ms=600&max_iterations=30"

	sc, text, progress := budgetCall(t, e, "tok-cost", map[string]any{"prompt": loop, "maxCostUsd": 0.025})
	wantBudgetExceeded(t, sc, text, "spent $0.0300", "maxCostUsd $0.0250", "iteration 3")
	if !strings.Contains(strings.Join(progress, "\n"), "spent)") {
		t.Errorf("no progress message carries the running cost: %q", progress)
	}

	sc, text, _ = budgetCall(t, e, "tok-iter", map[string]any{"prompt": loop, "maxIterations": 2})
	wantBudgetExceeded(t, sc, text, "iteration 3", "maxIterations 2", "spending $0.0200")

	// The server's limit: the default of a call without one, and a ceiling for a call asking more.
	sc, text, _ = budgetCall(t, e, "tok-default", map[string]any{"prompt": loop})
	wantBudgetExceeded(t, sc, text, "maxCostUsd $0.0500")
	sc, text, _ = budgetCall(t, e, "tok-ceiling", map[string]any{"prompt": loop, "maxCostUsd": 5})
	wantBudgetExceeded(t, sc, text, "maxCostUsd $0.0500")
	if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "--max-cost-usd") {
		t.Errorf("warnings %q, want the lowered limit named", ws)
	}

	// Within the limits: the answer, untouched.
	sc, _, _ = budgetCall(t, e, "tok-ok", map[string]any{"prompt": "Say fake:pong?cost_per_call=0.01", "maxCostUsd": 0.02, "maxIterations": 1})
	if sc["ok"] != true || sc["text"] != "PONG" {
		t.Errorf("a run within its limits: %v", sc)
	}
}

// TestSpendLimitsACP: over ACP the iterations come live, so maxIterations stops a turn; the
// cost is in the session's manifest, which the fake (like the CLI) writes when the turn ends:
// a turn that passed maxCostUsd only then keeps its answer, with a warning naming the spend.
func TestSpendLimitsACP(t *testing.T) {
	e := prepareEnv(t)
	e.start(acpServerArgs(e)...)
	sc, text, _ := budgetCall(t, e, "tok-acp-iter", map[string]any{"prompt": "Go fake:tool_loop?delay_ms=300&max_iterations=30", "maxIterations": 2})
	wantBudgetExceeded(t, sc, text, "iteration 3", "maxIterations 2")

	sc, _, _ = budgetCall(t, e, "tok-acp-cost", map[string]any{"prompt": "Say fake:pong?cost_per_call=0.5", "maxCostUsd": 0.1})
	if sc["ok"] != true || sc["text"] != "PONG" {
		t.Fatalf("a turn whose cost came only at its end: %v", sc)
	}
	if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "spent $0.5000, past its limit maxCostUsd $0.1000") {
		t.Errorf("warnings %q, want the spend past the limit named", ws)
	}
}
