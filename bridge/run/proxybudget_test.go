package run

import (
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestProxyAllowance: a key-less attempt's allowance at the egress proxy is maxIterations plus
// the retry slack in successful answers, and what is left of maxCostUsd at the model's list
// price — the highest price known for a model the table does not name. No limit, no allowance.
func TestProxyAllowance(t *testing.T) {
	if a := (&budget{}).allowance("gpt-4o"); a.Requests != 0 || a.CostUSD != 0 {
		t.Errorf("no limits: allowance %+v", a)
	}
	b := &budget{maxIter: 1, maxCost: 0.01}
	a := b.allowance("claude-sonnet-4-5")
	if a.Requests != 1+proxyRetrySlack || a.CostUSD != 0.01 || a.InputUSDPerMTok != 6 || a.OutputUSDPerMTok != 22.5 ||
		!strings.Contains(a.Limits, "maxIterations 1") || !strings.Contains(a.Limits, "maxCostUsd $0.0100") {
		t.Errorf("allowance %+v", a)
	}
	b.before = 0.004 // an earlier attempt's cost
	if a := b.allowance("fake-model"); a.CostUSD > 0.00600001 || a.OutputUSDPerMTok != 600 || !strings.Contains(a.Limits, "not in the price table") {
		t.Errorf("unknown model after $0.004: %+v", a)
	}
}

// TestProxyVerdict: a run whose provider requests the proxy refused at the allowance ends
// budget_exceeded with the proxy's count, whatever the run itself reported; other refusals do not.
func TestProxyVerdict(t *testing.T) {
	b := &budget{maxCost: 0.01}
	ok := cline.Verdict{Message: "done"} // succeeded
	x := &sandbox.EgressReport{Refused: []sandbox.Refusal{{Target: "api.example:443", Count: 1, Reason: "POST /admin: denied"}}}
	if v := b.proxyVerdict(ok, x); v.Kind != "" {
		t.Errorf("a policy refusal changed the verdict: %+v", v)
	}
	x.Refused = append(x.Refused, sandbox.Refusal{Target: "api.example:443", Count: 11, Budget: true,
		Reason: "over the call's spend limit: the proxy counted 2 provider answers with 600000 input and 0 output tokens"})
	v := b.proxyVerdict(ok, x)
	if v.Kind != cline.KindBudgetExceeded || !strings.Contains(v.Message, "11 times") || !strings.Contains(v.Message, "600000 input") {
		t.Errorf("verdict %+v, want budget_exceeded with the proxy's count", v)
	}
	if b.proxyVerdict(ok, nil).Kind != "" {
		t.Error("no report changed the verdict")
	}
}

// TestProxySpendCarriesOver: what the proxy counted of a failed attempt that reported no cost
// of its own is gone from the next attempt's allowance.
func TestProxySpendCarriesOver(t *testing.T) {
	b := &budget{maxCost: 0.01}
	b.Follow(func() {})
	b.Unfollow()
	failed := cline.Verdict{Kind: cline.KindTransientProviderError}
	if v := b.proxyVerdict(failed, &sandbox.EgressReport{Answers: 4, SpentUSD: 0.008}); v.Kind != cline.KindTransientProviderError {
		t.Errorf("verdict %+v", v)
	}
	if a := b.allowance("gpt-4o"); a.CostUSD > 0.0020001 || a.CostUSD < 0.0019999 {
		t.Errorf("the next attempt's allowance is $%.6f, want the $0.002 the proxy left", a.CostUSD)
	}
}
