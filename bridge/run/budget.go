package run

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
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
}

// begin starts following a new attempt; stop ends it. The earlier attempt's cost is kept.
func (b *budget) begin(stop context.CancelFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.before += b.cost
	b.cost, b.iter, b.stop = 0, 0, stop
}

// end stops following the attempt: a limit reached after this is not acted on.
func (b *budget) end() {
	b.mu.Lock()
	b.stop = nil
	b.mu.Unlock()
}

// observe takes a live event: a usage event's running cost, an iteration's start.
func (b *budget) observe(ev cline.Event) {
	switch {
	case ev.Usage != nil:
		b.setCost(ev.Usage.TotalCost)
	case ev.Type == "agent_event" && ev.EventType == "iteration_start":
		b.mu.Lock()
		b.iter = ev.Iteration
		b.check()
		b.mu.Unlock()
	}
}

// setCost records the running attempt's cost so far (never lower than what was seen).
func (b *budget) setCost(c float64) {
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

// overAtEnd is a warning for a limit passed by a report that came only as the attempt ended
// (ACP's manifest is written when a turn ends): the work was done and its answer is kept.
func (b *budget) overAtEnd() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over != "" || b.maxCost <= 0 || b.before+b.cost < b.maxCost {
		return ""
	}
	return fmt.Sprintf("the call spent $%.4f, past its limit maxCostUsd $%.4f: Cline reported that cost only when the turn ended, too late to stop it; the answer is kept", b.before+b.cost, b.maxCost)
}

// note is the running cost for a progress message: " ($0.0123 spent)", or "" before any cost.
func (b *budget) note() string {
	if s := b.spent(); s > 0 {
		return fmt.Sprintf(" ($%.4f spent)", s)
	}
	return ""
}

// verdict turns an attempt that a limit ended into budget_exceeded.
func (b *budget) verdict(v cline.Verdict) cline.Verdict {
	why := b.exceeded()
	if why == "" {
		return v
	}
	return cline.Verdict{Kind: cline.KindBudgetExceeded, Message: why, Usage: v.Usage, Model: v.Model, Warnings: v.Warnings}
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

// watchUsage follows an ACP session's cost while its turn runs: the CLI puts usage in the
// session's manifest, not on the wire (docs/acp.md), so the manifest is read every second. The
// returned func stops it and waits for it.
func (k *call) watchUsage(dataDir, id string, before *cline.Usage) func() {
	if k.budget.maxCost <= 0 {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(usagePoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if u, err := acp.ReadUsage(dataDir, id); err == nil {
					k.budget.setCost(since(u, before).TotalCost)
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// usagePoll is how often watchUsage reads an ACP session's manifest.
const usagePoll = time.Second
