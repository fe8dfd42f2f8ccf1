package service

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"
)

// Refusal is why a call was not admitted: a failure kind of the tool results (rate_limited or
// budget_exceeded), a message for the model, whether a retry can succeed, and when.
type Refusal struct {
	Kind       string
	Message    string
	Retryable  bool
	RetryAfter time.Duration
}

// Kinds of refusal.
const (
	KindRateLimited    = "rate_limited"
	KindBudgetExceeded = "budget_exceeded"
)

// defaultRetryAfter is the retry hint before a tenant's first run finished.
const defaultRetryAfter = 10 * time.Second

// Admission holds every tenant's runs, queue, background jobs and spend of the UTC day, and
// admits or refuses calls against the limits of the tenant as the call names it (so limits
// changed by a rotated token file apply to the next call). A call beyond the tenant's concurrency
// waits in the tenant's own FIFO queue; beyond MaxQueued it is refused at once, never left
// waiting. Safe for concurrent use; the zero value is ready.
type Admission struct {
	// Now is the clock (default time.Now); the day of the spend limit is its UTC day.
	Now func() time.Time
	// SpendFile, when set, keeps the day's spend across restarts of this service (spend.go);
	// Log hears when it cannot be read or written.
	SpendFile string
	Log       *slog.Logger

	mu      sync.Mutex
	tenants map[string]*usage
	loaded  bool
}

// usage is one tenant's state.
type usage struct {
	running int
	waiting list.List // of *waiter, foreground and background alike, in arrival order
	queued  int       // foreground waiters (bounded by MaxQueued)
	jobs    int
	day     string
	spent   float64
	// meanRun is a running mean of the tenant's run durations, for the retry hint.
	meanRun time.Duration
}

type waiter struct {
	ready      chan struct{}
	granted    bool
	foreground bool
}

func (a *Admission) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// usageLocked is t's state, its spend reset when the UTC day changed; a.mu is held.
func (a *Admission) usageLocked(name string) *usage {
	if a.tenants == nil {
		a.tenants = map[string]*usage{}
	}
	a.loadLocked()
	u := a.tenants[name]
	if u == nil {
		u = &usage{}
		a.tenants[name] = u
	}
	if d := a.now().UTC().Format(time.DateOnly); u.day != d {
		u.day, u.spent = d, 0
	}
	return u
}

// Acquire admits one run of t: at once when fewer than MaxConcurrent of its runs are running,
// else after waiting its turn. A foreground call finds a place in the queue only while fewer than
// MaxQueued wait, and is refused at once otherwise; a background job's run always waits (its
// number is bounded by MaxJobs). Past the day's spend limit every run is refused. release gives
// the slot back (call it exactly once) with the run's duration and cost. A ctx that ends while
// waiting leaves the queue at once and returns a refusal of kind cancelled.
func (a *Admission) Acquire(ctx context.Context, t Tenant, background bool) (release func(time.Duration, float64), refusal *Refusal) {
	a.mu.Lock()
	u := a.usageLocked(t.Name)
	if r := a.overBudgetLocked(t, u); r != nil {
		a.mu.Unlock()
		return nil, r
	}
	release = func(d time.Duration, cost float64) { a.release(t, d, cost) }
	if u.running < t.Limits.MaxConcurrent && u.waiting.Len() == 0 {
		u.running++
		a.mu.Unlock()
		return release, nil
	}
	if !background && u.queued >= t.Limits.MaxQueued {
		r := &Refusal{Kind: KindRateLimited, Retryable: true, RetryAfter: retryAfter(u, t)}
		r.Message = fmt.Sprintf("tenant %s is at its limit: %d run(s) running (maxConcurrent %d) and %d waiting (maxQueued %d); retry in about %d s",
			t.Name, u.running, t.Limits.MaxConcurrent, u.queued, t.Limits.MaxQueued, seconds(r.RetryAfter))
		a.mu.Unlock()
		return nil, r
	}
	w := &waiter{ready: make(chan struct{}), foreground: !background}
	el := u.waiting.PushBack(w)
	if w.foreground {
		u.queued++
	}
	a.mu.Unlock()
	select {
	case <-w.ready:
		if r := a.overBudget(t); r != nil { // the runs ahead may have spent the rest
			release(0, 0)
			return nil, r
		}
		return release, nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	if w.granted {
		a.mu.Unlock()
		release(0, 0) // granted as ctx ended: pass the slot on
	} else {
		u.waiting.Remove(el)
		if w.foreground {
			u.queued--
		}
		a.mu.Unlock()
	}
	return nil, &Refusal{Kind: "cancelled", Message: "the call ended while it waited for a slot of tenant " + t.Name}
}

// release ends one run of t: its cost counts, and its slot goes to the first waiter unless the
// tenant runs more than its (possibly lowered) MaxConcurrent.
func (a *Admission) release(t Tenant, d time.Duration, cost float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.usageLocked(t.Name)
	if cost > 0 && !math.IsInf(cost, 0) && !math.IsNaN(cost) {
		u.spent += cost
		a.saveLocked()
	}
	if d > 0 {
		if u.meanRun == 0 {
			u.meanRun = d
		} else {
			u.meanRun = (3*u.meanRun + d) / 4
		}
	}
	u.running--
	for u.running < t.Limits.MaxConcurrent && u.waiting.Len() > 0 {
		w := u.waiting.Remove(u.waiting.Front()).(*waiter)
		if w.foreground {
			u.queued--
		}
		w.granted = true
		u.running++
		close(w.ready)
	}
}

// overBudgetLocked is the refusal of a tenant past its spend limit of the UTC day.
func (a *Admission) overBudgetLocked(t Tenant, u *usage) *Refusal {
	if t.Limits.MaxSpendUSDPerDay <= 0 || u.spent < t.Limits.MaxSpendUSDPerDay {
		return nil
	}
	now := a.now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	return &Refusal{Kind: KindBudgetExceeded, RetryAfter: midnight.Sub(now),
		Message: fmt.Sprintf("tenant %s spent $%.2f today (UTC), its limit is $%.2f a day (maxSpendUsdPerDay); calls are refused until 00:00 UTC, in %d s",
			t.Name, u.spent, t.Limits.MaxSpendUSDPerDay, seconds(midnight.Sub(now)))}
}

// overBudget is the refusal of t past its spend limit of the day (nil within it).
func (a *Admission) overBudget(t Tenant) *Refusal {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.overBudgetLocked(t, a.usageLocked(t.Name))
}

// Remaining is what t may still spend today: +Inf without a daily limit, 0 past it.
func (a *Admission) Remaining(t Tenant) float64 {
	if t.Limits.MaxSpendUSDPerDay <= 0 {
		return math.Inf(1)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return max(0, t.Limits.MaxSpendUSDPerDay-a.usageLocked(t.Name).spent)
}

// StartJob admits one background job of t, counted until done is called (exactly once).
func (a *Admission) StartJob(t Tenant) (done func(), refusal *Refusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.usageLocked(t.Name)
	if r := a.overBudgetLocked(t, u); r != nil {
		return nil, r
	}
	if t.Limits.MaxJobs == 0 {
		return nil, &Refusal{Kind: KindRateLimited, Message: "tenant " + t.Name + " may not run background jobs (maxJobs 0): call without \"background\""}
	}
	if u.jobs >= t.Limits.MaxJobs {
		r := &Refusal{Kind: KindRateLimited, Retryable: true, RetryAfter: retryAfter(u, t)}
		r.Message = fmt.Sprintf("tenant %s runs %d background job(s), its limit (maxJobs %d); retry in about %d s, or follow the running ones with cline_job",
			t.Name, u.jobs, t.Limits.MaxJobs, seconds(r.RetryAfter))
		return nil, r
	}
	u.jobs++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			a.usageLocked(t.Name).jobs--
			a.mu.Unlock()
		})
	}, nil
}

// Snapshot is one tenant's counts (for the log and the tests).
type Snapshot struct {
	Running, Queued, Jobs int
	Spent                 float64
}

// Snapshot returns the counts of the tenant named name.
func (a *Admission) Snapshot(name string) Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.usageLocked(name)
	return Snapshot{Running: u.running, Queued: u.queued, Jobs: u.jobs, Spent: u.spent}
}

// retryAfter estimates when a slot frees: the tenant's mean run divided among its slots, times
// the places ahead, between 1 s and 5 min.
func retryAfter(u *usage, t Tenant) time.Duration {
	mean := u.meanRun
	if mean <= 0 {
		mean = defaultRetryAfter
	}
	d := mean * time.Duration(u.queued+1) / time.Duration(max(1, t.Limits.MaxConcurrent))
	return min(max(d, time.Second), 5*time.Minute)
}

func seconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }
