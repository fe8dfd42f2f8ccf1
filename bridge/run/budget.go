package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// budget follows what one call spends — the cost the CLI reports in its live usage events (the
// --json stream) or its session manifest (ACP), and the iteration it is in — against the call's
// limits (maxCostUsd, maxIterations). When a limit is reached while an attempt runs, it ends the
// attempt (stop), and the attempt's verdict becomes budget_exceeded with what was spent. The cost
// of a call's earlier attempts counts towards its limit.
type budget struct {
	maxCost float64 // USD; 0: no limit
	maxIter int     // 0: no limit

	mu     sync.Mutex
	before float64 // the cost of the call's earlier attempts
	cost   float64 // the running attempt's cost so far
	iter   int     // the running attempt's iteration
	over   string  // the limit that ended the run ("maxCostUsd", "maxIterations"); "" while within
	atIter int     // the iteration it ended in
	stop   context.CancelFunc
	// proxySpent is what the egress proxy counted of the call's earlier key-less attempts
	// (proxyVerdict): a run that under-reports its cost and fails does not get a new allowance.
	proxySpent float64
}

// Follow starts following a new attempt; stop ends it. The earlier attempt's cost is kept.
func (b *budget) Follow(stop context.CancelFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.before += b.cost
	b.cost, b.iter, b.stop = 0, 0, stop
}

// Unfollow stops following the attempt: a limit reached after this is not acted on.
func (b *budget) Unfollow() {
	b.mu.Lock()
	b.stop = nil
	b.mu.Unlock()
}

// observe takes a live event: a usage event's running cost, an iteration's start.
func (b *budget) observe(ev cline.Event) {
	switch {
	case ev.Usage != nil:
		b.SetCost(ev.Usage.TotalCost)
	case ev.Type == "agent_event" && ev.EventType == "iteration_start":
		b.mu.Lock()
		b.iter = ev.Iteration
		b.check()
		b.mu.Unlock()
	}
}

// SetCost records the running attempt's cost so far (never lower than what was seen).
func (b *budget) SetCost(c float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cost = max(b.cost, c)
	b.check()
}

// check acts on a limit reached while the attempt runs (caller holds mu).
func (b *budget) check() {
	if b.over != "" || b.stop == nil {
		return
	}
	switch {
	case b.maxCost > 0 && b.before+b.cost >= b.maxCost:
		b.over = "maxCostUsd"
	case b.maxIter > 0 && b.iter > b.maxIter:
		b.over = "maxIterations"
	default:
		return
	}
	b.atIter = b.iter
	b.stop()
}

// exceeded says why a limit ended the running attempt and what the call spent in all (the
// reports that came while Cline was stopping count too), "" when no limit did.
func (b *budget) exceeded() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	spent := b.before + b.cost
	switch b.over {
	case "maxCostUsd":
		return fmt.Sprintf("the call spent $%.4f, reaching its limit maxCostUsd $%.4f in iteration %d; Cline was stopped", spent, b.maxCost, b.atIter)
	case "maxIterations":
		return fmt.Sprintf("Cline began iteration %d, past the call's limit maxIterations %d, after spending $%.4f; it was stopped", b.atIter, b.maxIter, spent)
	}
	return ""
}

// spent is the call's cost so far, its earlier attempts included.
func (b *budget) spent() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.before + b.cost
}

// OverAtEnd is a warning for a limit passed by a report that came only as the attempt ended
// (ACP's manifest is written when a turn ends): the work was done and its answer is kept.
func (b *budget) OverAtEnd() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over != "" || b.maxCost <= 0 || b.before+b.cost < b.maxCost {
		return ""
	}
	return fmt.Sprintf("the call spent $%.4f, past its limit maxCostUsd $%.4f: Cline reported that cost only when the turn ended, too late to stop it; the answer is kept", b.before+b.cost, b.maxCost)
}

// WatchesCost says whether the call has a cost limit to follow.
func (b *budget) WatchesCost() bool { return b.maxCost > 0 }

// note is the running cost for a progress message: " ($0.0123 spent)", or "" before any cost.
func (b *budget) note() string {
	if s := b.spent(); s > 0 {
		return fmt.Sprintf(" ($%.4f spent)", s)
	}
	return ""
}

// Verdict turns an attempt that a limit ended into budget_exceeded.
func (b *budget) Verdict(v cline.Verdict) cline.Verdict {
	why := b.exceeded()
	if why == "" {
		return v
	}
	return cline.Verdict{Kind: cline.KindBudgetExceeded, Message: why, Usage: v.Usage, Model: v.Model, Warnings: v.Warnings}
}

// proxyRetrySlack is how many successful provider answers a key-less run may get beyond one per
// iteration it may begin (maxIterations) before the egress proxy refuses it: room for a retry of
// a stream that broke after it was billed. Failed answers (429, 5xx) do not count.
const proxyRetrySlack = 2

// allowance is what the egress proxy lets an attempt spend with the provider key it keeps for
// the run (sandbox.Credential.Allowance): maxIterations + proxyRetrySlack successful answers, and
// tokens worth what is left of maxCostUsd at model's price (cline.TokenPrice: the family's list
// price, else the highest the table knows). The proxy enforces it whatever the run reports about
// itself, so it may stop a run earlier than the CLI's own cost figure, never later.
func (b *budget) allowance(model string) sandbox.Allowance {
	if b == nil {
		return sandbox.Allowance{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var a sandbox.Allowance
	var limits []string
	if b.maxIter > 0 {
		a.Requests = b.maxIter + proxyRetrySlack
		limits = append(limits, fmt.Sprintf("maxIterations %d + %d for the CLI's retries", b.maxIter, proxyRetrySlack))
	}
	if b.maxCost > 0 {
		// Before the attempt begins, its predecessor's cost is still in b.cost; the proxy's
		// count of the earlier attempts counts when it is higher.
		left := max(b.maxCost-max(b.before+b.cost, b.proxySpent), 1e-9)
		in, out, known := cline.TokenPrice(model)
		price := "the highest price known, as model " + fmt.Sprintf("%q", model) + " is not in the price table"
		if known {
			price = "the list price of " + fmt.Sprintf("%q", model)
		}
		a.CostUSD, a.InputUSDPerMTok, a.OutputUSDPerMTok = left, in, out
		limits = append(limits, fmt.Sprintf("$%.4f left of maxCostUsd $%.4f at $%g/$%g per million input/output tokens, %s", left, b.maxCost, in, out, price))
	}
	a.Limits = strings.Join(limits, "; ")
	return a
}

// modelOf is the model the run uses: the call's, else the one the copy's provider names.
func (p *prep) modelOf(cp *settings.Copy) string {
	if p.Model != "" {
		return p.Model
	}
	var doc struct {
		Providers map[string]struct {
			Settings struct {
				Model string `json:"model"`
			} `json:"settings"`
		} `json:"providers"`
	}
	if b, err := os.ReadFile(cp.SettingsPath); err == nil {
		_ = json.Unmarshal(b, &doc)
	}
	return doc.Providers[cp.Target].Settings.Model
}

// proxyVerdict takes what the egress proxy counted of an attempt — its priced tokens count
// towards the next attempt's allowance — and turns an attempt whose provider requests the proxy
// refused at the call's allowance into budget_exceeded, saying what the proxy counted: the run
// cannot spend past the limits by not reporting what it spends.
func (b *budget) proxyVerdict(v cline.Verdict, x *sandbox.EgressReport) cline.Verdict {
	if x == nil || b == nil {
		return v
	}
	b.mu.Lock()
	b.proxySpent += x.SpentUSD
	b.mu.Unlock()
	if v.Kind == cline.KindBudgetExceeded {
		return v
	}
	for _, r := range x.Refused {
		if r.Budget {
			msg := fmt.Sprintf("the egress proxy refused the run's provider requests %s at the call's spend limits: %s", times(r.Count), r.Reason)
			return cline.Verdict{Kind: cline.KindBudgetExceeded, Message: msg, Usage: v.Usage, Model: v.Model, Warnings: v.Warnings}
		}
	}
	return v
}

// budgetFor is the call's spend limits: its own, else the server's (--max-cost-usd,
// --max-iterations), which are also the most a call may ask for: a higher one is lowered to the
// server's, with a warning.
func (r *Runner) budgetFor(k *call) *budget {
	b := &budget{maxCost: k.MaxCostUSD, maxIter: k.MaxIterations}
	if c := r.cfg.MaxCostUSD; c > 0 && (b.maxCost == 0 || b.maxCost > c) {
		if b.maxCost > c {
			k.warnings = append(k.warnings, fmt.Sprintf("maxCostUsd %.4f is above this server's limit (--max-cost-usd %.4f), which applies", b.maxCost, c))
		}
		b.maxCost = c
	}
	if n := r.cfg.MaxIterations; n > 0 && (b.maxIter == 0 || b.maxIter > n) {
		if b.maxIter > n {
			k.warnings = append(k.warnings, fmt.Sprintf("maxIterations %d is above this server's limit (--max-iterations %d), which applies", b.maxIter, n))
		}
		b.maxIter = n
	}
	return b
}
