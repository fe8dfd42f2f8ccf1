package run

import (
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

func usageEv(cost float64) cline.Event {
	return cline.Event{Type: "agent_event", EventType: "usage", Usage: &cline.Usage{TotalCost: cost}}
}

func iterEv(n int) cline.Event {
	return cline.Event{Type: "agent_event", EventType: "iteration_start", Iteration: n}
}

// TestBudgetStopsOnceAtTheLimit: the first report that reaches the cost limit stops the attempt
// once; the verdict becomes budget_exceeded with what was spent; an earlier attempt's cost counts.
func TestBudgetStopsOnceAtTheLimit(t *testing.T) {
	b := &budget{maxCost: 0.05}
	stops := 0
	b.Follow(func() { stops++ })
	b.observe(iterEv(1))
	b.observe(usageEv(0.02))
	if stops != 0 || b.exceeded() != "" {
		t.Fatalf("stopped below the limit: %d %q", stops, b.exceeded())
	}
	b.Unfollow() // a failed first attempt: $0.02 spent
	b.Follow(func() { stops++ })
	b.observe(usageEv(0.02)) // $0.04 for the call
	b.observe(usageEv(0.01)) // a lower report never lowers what was seen
	if stops != 0 {
		t.Fatal("stopped at $0.04 of $0.05")
	}
	b.observe(iterEv(2))
	b.observe(usageEv(0.03)) // $0.05: reached
	b.observe(usageEv(0.04))
	if stops != 1 {
		t.Fatalf("stop called %d times, want once", stops)
	}
	v := b.Verdict(cline.Verdict{OK: true, Text: "answer"})
	if v.OK || v.Kind != cline.KindBudgetExceeded || !strings.Contains(v.Message, "spent $0.0600") || !strings.Contains(v.Message, "iteration 2") {
		t.Errorf("verdict %+v", v)
	}
	if cline.ShouldRetry(v, 60) {
		t.Error("budget_exceeded is retried")
	}
}

// TestBudgetIterationsAndTheEnd: maxIterations acts when iteration max+1 begins; a cost that
// comes only after the attempt ended does not stop anything but yields the warning.
func TestBudgetIterationsAndTheEnd(t *testing.T) {
	b := &budget{maxIter: 2, maxCost: 1}
	stopped := false
	b.Follow(func() { stopped = true })
	b.observe(iterEv(1))
	b.observe(iterEv(2))
	if stopped {
		t.Fatal("stopped in iteration 2 of 2")
	}
	b.observe(iterEv(3))
	if !stopped || !strings.Contains(b.exceeded(), "iteration 3") {
		t.Fatalf("iteration 3: stopped=%v %q", stopped, b.exceeded())
	}

	b = &budget{maxCost: 0.1}
	b.Follow(func() { t.Error("stopped after the end") })
	b.Unfollow()
	b.SetCost(0.5)
	if b.exceeded() != "" || !strings.Contains(b.OverAtEnd(), "$0.5000, past its limit maxCostUsd $0.1000") {
		t.Errorf("exceeded %q, overAtEnd %q", b.exceeded(), b.OverAtEnd())
	}
	if v := b.Verdict(cline.Verdict{OK: true}); !v.OK {
		t.Errorf("a limit passed after the end failed the attempt: %+v", v)
	}
	if got := (&budget{}).note(); got != "" {
		t.Errorf("note without cost %q", got)
	}
}

// TestBudgetForServerCeiling: the server's limits are the default and the ceiling of a call's.
func TestBudgetForServerCeiling(t *testing.T) {
	r := &Runner{cfg: Config{MaxCostUSD: 1, MaxIterations: 10}}
	for _, tc := range []struct {
		cost     float64
		iter     int
		wantCost float64
		wantIter int
		warnings int
	}{
		{0, 0, 1, 10, 0},
		{0.5, 5, 0.5, 5, 0},
		{2, 20, 1, 10, 2},
	} {
		k := &call{Call: Call{MaxCostUSD: tc.cost, MaxIterations: tc.iter}}
		b := r.budgetFor(k)
		if b.maxCost != tc.wantCost || b.maxIter != tc.wantIter || len(k.warnings) != tc.warnings {
			t.Errorf("call %v/%d: budget %v/%d with %d warnings, want %v/%d with %d", tc.cost, tc.iter, b.maxCost, b.maxIter, len(k.warnings), tc.wantCost, tc.wantIter, tc.warnings)
		}
	}
}
