package service

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// Metrics counts what the service did, for a Prometheus scrape of Handler (text format 0.0.4):
// calls by tool and outcome, refusals by reason (rate_limited, budget_exceeded, auth), and the
// Admission's runs, queue, background jobs and spend of the UTC day. Tenant names appear only
// with PerTenant: without it every series is a sum over the tenants. Safe for concurrent use.
type Metrics struct {
	Admission *Admission
	// PerTenant adds series labelled by tenant (runs, queue, jobs, spend, refusals).
	PerTenant bool

	mu       sync.Mutex
	calls    map[[2]string]uint64 // {tool, outcome}
	refusals map[[2]string]uint64 // {reason, tenant ("" for auth)}
}

// Refusal reasons of cline_mcp_refusals_total besides the refusal kinds.
const reasonAuth = "auth"

// count records one finished call of tool by tenant with its result's kind.
func (m *Metrics) count(tool run.Tool, tenant string, res *run.Result) {
	outcome := res.Kind
	switch {
	case res.OK:
		outcome = "ok"
	case outcome == "":
		outcome = "failed"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calls == nil {
		m.calls = map[[2]string]uint64{}
	}
	m.calls[[2]string{string(tool), outcome}]++
	if outcome == KindRateLimited || outcome == KindBudgetExceeded {
		m.refuseLocked(outcome, tenant)
	}
}

func (m *Metrics) refuseLocked(reason, tenant string) {
	if m.refusals == nil {
		m.refusals = map[[2]string]uint64{}
	}
	m.refusals[[2]string{reason, tenant}]++
}

// Runner wraps next (the service's Runner) so every call it answers is counted.
func (m *Metrics) Runner(next Inner) Inner { return meteredRunner{m: m, next: next} }

type meteredRunner struct {
	m    *Metrics
	next Inner
}

func (r meteredRunner) Do(ctx context.Context, call run.Call, progress run.Progress) run.Result {
	res := r.next.Do(ctx, call, progress)
	r.m.count(call.Tool, Owner(ctx), &res)
	return res
}

// Gate wraps g so a background job refused at its start counts as a refusal (its tool is not
// known there: it counts under "background").
func (m *Metrics) Gate(g Gate) MeteredGate { return MeteredGate{Gate: g, m: m} }

// MeteredGate is a Gate whose refusals are counted.
type MeteredGate struct {
	Gate
	m *Metrics
}

// Job implements mcpserver.Gate.
func (g MeteredGate) Job(ctx context.Context) (context.Context, func(), *run.Result) {
	values, done, refusal := g.Gate.Job(ctx)
	if refusal != nil {
		g.m.count("background", Owner(ctx), refusal)
	}
	return values, done, refusal
}

// Authenticator wraps a (not nil) so every request it turns away counts as an auth refusal.
func (m *Metrics) Authenticator(a Authenticator) Authenticator { return meteredAuth{m: m, next: a} }

type meteredAuth struct {
	m    *Metrics
	next Authenticator
}

func (a meteredAuth) Lookup(token string) (Tenant, bool) {
	t, ok := a.next.Lookup(token)
	if !ok {
		a.m.mu.Lock()
		a.m.refuseLocked(reasonAuth, "")
		a.m.mu.Unlock()
	}
	return t, ok
}

// Handler answers a scrape. It needs no token, like /healthz: without PerTenant it names no
// tenant.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.write(w)
	})
}

// write prints every series in the text format, in a stable order.
func (m *Metrics) write(w io.Writer) {
	m.mu.Lock()
	calls := sortedKeys(m.calls)
	callN := copyMap(m.calls)
	refusals := map[[2]string]uint64{}
	for k, n := range m.refusals {
		if !m.PerTenant {
			k[1] = ""
		}
		refusals[k] += n
	}
	m.mu.Unlock()

	family(w, "cline_mcp_calls_total", "counter", "Tool calls answered, by tool and outcome (ok, or the failure kind).")
	for _, k := range calls {
		fmt.Fprintf(w, "cline_mcp_calls_total{tool=%s,outcome=%s} %d\n", quote(k[0]), quote(k[1]), callN[k])
	}
	family(w, "cline_mcp_refusals_total", "counter", "Calls refused: rate_limited, budget_exceeded, or auth (no valid bearer token).")
	for _, reason := range []string{KindRateLimited, KindBudgetExceeded, reasonAuth} {
		if _, seen := refusals[[2]string{reason, ""}]; !seen {
			refusals[[2]string{reason, ""}] += 0 // every reason is present, at 0 before its first refusal
		}
	}
	for _, k := range sortedKeys(refusals) {
		labels := "reason=" + quote(k[0])
		if k[1] != "" {
			labels += ",tenant=" + quote(k[1])
		}
		fmt.Fprintf(w, "cline_mcp_refusals_total{%s} %d\n", labels, refusals[k])
	}
	m.writeAdmission(w)
}

// writeAdmission prints the gauges of the Admission: sums, and per tenant with PerTenant.
func (m *Metrics) writeAdmission(w io.Writer) {
	snaps := m.Admission.snapshots()
	names := make([]string, 0, len(snaps))
	var sum Snapshot
	for name, s := range snaps {
		names = append(names, name)
		sum.Running += s.Running
		sum.Queued += s.Queued
		sum.Jobs += s.Jobs
		sum.Spent += s.Spent
	}
	sort.Strings(names)
	gauges := []struct {
		name, help string
		value      func(Snapshot) string
	}{
		{"cline_mcp_runs_in_flight", "Runs admitted and not yet finished.", func(s Snapshot) string { return strconv.Itoa(s.Running) }},
		{"cline_mcp_calls_queued", "Foreground calls waiting for a slot of their tenant.", func(s Snapshot) string { return strconv.Itoa(s.Queued) }},
		{"cline_mcp_jobs_running", "Background jobs started and not yet done.", func(s Snapshot) string { return strconv.Itoa(s.Jobs) }},
		{"cline_mcp_spend_usd_today", "Spend of the UTC day in USD, as the runs reported it.", func(s Snapshot) string { return float(s.Spent) }},
	}
	for _, g := range gauges {
		family(w, g.name, "gauge", g.help)
		fmt.Fprintf(w, "%s %s\n", g.name, g.value(sum))
		if !m.PerTenant {
			continue
		}
		for _, name := range names {
			fmt.Fprintf(w, "%s{tenant=%s} %s\n", g.name, quote(name), g.value(snaps[name]))
		}
	}
}

// snapshots is every known tenant's counts, the spend of an earlier UTC day as 0.
func (a *Admission) snapshots() map[string]Snapshot {
	out := map[string]Snapshot{}
	if a == nil {
		return out
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked()
	day := a.now().UTC().Format(time.DateOnly)
	for name, u := range a.tenants {
		s := Snapshot{Running: u.running, Queued: u.queued, Jobs: u.jobs}
		if u.day == day {
			s.Spent = u.spent
		}
		out[name] = s
	}
	return out
}

func family(w io.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// quote is a label value in the text format: quoted, with \, " and newline escaped.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func float(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func sortedKeys(m map[[2]string]uint64) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	return keys
}

func copyMap(m map[[2]string]uint64) map[[2]string]uint64 {
	out := make(map[[2]string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
