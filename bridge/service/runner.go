package service

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/sandbox"
	sgit "github.com/cline-mcp/cline-mcp/sandbox/git"
)

// Inner runs a call (*run.Runner).
type Inner interface {
	Do(ctx context.Context, call run.Call, progress run.Progress) run.Result
}

// Runner admits each call of an authenticated tenant before Inner runs it: only in a container,
// only under the tenant's root, only a conversation the tenant started, within the tenant's
// concurrency, queue and spend of the day (the call's maxCostUsd is lowered to what is left of
// it). A refused call never reaches Inner; its result says why and when to retry. A call whose
// repository the service checked out (Repositories) works in that checkout, not under the root.
type Runner struct {
	Inner     Inner
	Admission *Admission
	// Git runs the git of the patches of apply_cline_edits on a checkout; the zero value runs
	// git from PATH.
	Git sgit.Git

	mu       sync.Mutex
	sessions map[string]string // conversation id → tenant that started it
}

// Do implements mcpserver.Runner.
func (r *Runner) Do(ctx context.Context, call run.Call, progress run.Progress) run.Result {
	t, ok := TenantFrom(ctx)
	if !ok {
		return run.Result{Kind: "launch_failed", Message: "the call carries no tenant: the service runs only authenticated calls"}
	}
	if call.Isolation != "" && !call.Isolation.Container() {
		return run.Result{Kind: "launch_failed", Message: fmt.Sprintf("isolation %q is not offered by this service: its runs are isolated in containers", call.Isolation)}
	}
	co := checkoutFrom(ctx)
	if co != nil {
		co.taken.Store(true)
		defer co.Remove() // the service's checkout of this call lives as long as its run
	}
	if co == nil || call.Cwd != co.Dir {
		if err := r.inRoot(t, call.Cwd); err != nil {
			return run.Result{Kind: "launch_failed", Message: err.Error()}
		}
	}
	if call.SessionID != "" && !r.owns(t, call.SessionID) {
		return run.Result{Kind: "launch_failed", Message: "sessionId " + call.SessionID + " is not a conversation of tenant " + t.Name + " on this service"}
	}
	release, refusal := r.Admission.Acquire(ctx, t, isBackground(ctx))
	if refusal != nil {
		return refusal.Result()
	}
	if left := r.Admission.Remaining(t); !math.IsInf(left, 1) && (call.MaxCostUSD == 0 || call.MaxCostUSD > left) {
		if left <= 0 { // spent by a run that ended since: 0 would mean no limit
			release(0, 0)
			return r.Admission.overBudget(t).Result()
		}
		call.MaxCostUSD = left
	}
	var patch func(*run.Result)
	if co != nil && call.Cwd == co.Dir && call.Tool == run.ApplyClineEdits {
		patch = patchAfter(ctx, &r.Git, co.Dir)
	}
	start := time.Now()
	res := r.Inner.Do(ctx, call, progress)
	if patch != nil {
		patch(&res)
	}
	cost := 0.0
	if res.Usage != nil {
		cost = res.Usage.TotalCost
	}
	release(time.Since(start), cost)
	if res.SessionID != "" {
		r.mu.Lock()
		if r.sessions == nil {
			r.sessions = map[string]string{}
		}
		r.sessions[res.SessionID] = t.Name
		r.mu.Unlock()
	}
	return res
}

func (r *Runner) owns(t Tenant, session string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[session] == t.Name
}

// inRoot checks that cwd (absolute, validated by the MCP layer) lies under the tenant's root,
// both resolved through symlinks.
func (r *Runner) inRoot(t Tenant, cwd string) error {
	if t.Root == "" {
		return nil
	}
	if cwd == "" {
		return fmt.Errorf("cwd is required: tenant %s may work only under %s", t.Name, t.Root)
	}
	root, err := filepath.EvalSymlinks(t.Root)
	if err != nil {
		return fmt.Errorf("the root of tenant %s is not usable: %v", t.Name, err)
	}
	dir, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return fmt.Errorf("cwd %s: %v", cwd, err)
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("cwd %s is outside %s, the directory of tenant %s", cwd, t.Root, t.Name)
	}
	return nil
}

// Result is the refusal as a tool result.
func (f *Refusal) Result() run.Result {
	return run.Result{Kind: f.Kind, Message: f.Message, Retryable: f.Retryable, RetryAfterSeconds: seconds(f.RetryAfter)}
}

// Floor checks that the service's isolation floor keeps every run in a container.
func Floor(iso sandbox.Isolation) error {
	if !iso.Container() {
		return fmt.Errorf("the HTTP service runs calls only in containers: start it with --isolation docker or --isolation kubernetes (not %q)", iso)
	}
	return nil
}

// Gate is the MCP layer's view of the service (mcpserver.Gate): whose request it is, and whether
// its tenant may start another background job.
type Gate struct{ Admission *Admission }

// Owner names the tenant of ctx.
func (g Gate) Owner(ctx context.Context) string { return Owner(ctx) }

// Job admits a background job of the tenant of ctx; its run waits for a slot without counting
// against maxQueued.
func (g Gate) Job(ctx context.Context) (context.Context, func(), *run.Result) {
	t, ok := TenantFrom(ctx)
	if !ok {
		return nil, nil, &run.Result{Kind: "launch_failed", Message: "the call carries no tenant: the service runs only authenticated calls"}
	}
	done, refusal := g.Admission.StartJob(t)
	if refusal != nil {
		res := refusal.Result()
		return nil, nil, &res
	}
	return AsBackground(ctx), done, nil
}
