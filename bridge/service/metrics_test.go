package service

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// costInner answers each call after release is closed (nil: at once), reporting cost.
type costInner struct {
	started chan struct{}
	release chan struct{}
	cost    float64
}

func (c *costInner) Do(_ context.Context, _ run.Call, _ run.Progress) run.Result {
	if c.started != nil {
		c.started <- struct{}{}
	}
	if c.release != nil {
		<-c.release
	}
	return run.Result{OK: true, Usage: &run.Usage{TotalCost: c.cost}}
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("scrape: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	return rec.Body.String()
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(body, "\n") {
		have[l] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("scrape lacks %q; got:\n%s", l, body)
		}
	}
}

// TestMetricsScrape: after calls that succeed, one refused for concurrency, one past the spend
// limit and two requests without a valid token, the scrape counts each; a run in flight shows
// while it runs; tenant names appear only with PerTenant.
func TestMetricsScrape(t *testing.T) {
	adm := &Admission{}
	m := &Metrics{Admission: adm}
	inner := &costInner{started: make(chan struct{}, 1), release: make(chan struct{}), cost: 0.75}
	r := m.Runner(&Runner{Inner: inner, Admission: adm})
	acme := Tenant{Name: "acme", Limits: Limits{MaxConcurrent: 1, MaxSpendUSDPerDay: 1}}
	ctx := WithTenant(t.Context(), acme)
	call := run.Call{Tool: run.AskCline}

	done := make(chan run.Result)
	go func() { done <- r.Do(ctx, call, nil) }()
	<-inner.started
	wantLines(t, scrape(t, m.Handler()), "cline_mcp_runs_in_flight 1", "cline_mcp_calls_queued 0")
	if res := r.Do(ctx, call, nil); res.Kind != KindRateLimited {
		t.Fatalf("second call: got %+v, want rate_limited", res)
	}
	close(inner.release)
	if res := <-done; !res.OK {
		t.Fatalf("first call: %+v", res)
	}
	inner.started = nil
	if res := r.Do(ctx, run.Call{Tool: run.ReviewCline}, nil); !res.OK { // 0.25 left: runs, spends 0.75
		t.Fatalf("third call: %+v", res)
	}
	if res := r.Do(ctx, call, nil); res.Kind != KindBudgetExceeded {
		t.Fatalf("fourth call: got %+v, want budget_exceeded", res)
	}

	toks, err := LoadTokens(writeTokenFile(t, `{"tenants": [{"name": "acme", "tokenSha256": ["`+Hash("good")+`"], "maxConcurrent": 1}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	auth := Auth(m.Authenticator(toks), Tenant{}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, header := range []string{"", "Bearer wrong", "Bearer good"} {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		auth.ServeHTTP(httptest.NewRecorder(), req)
	}

	body := scrape(t, m.Handler())
	wantLines(t, body,
		`cline_mcp_calls_total{tool="ask_cline",outcome="ok"} 1`,
		`cline_mcp_calls_total{tool="ask_cline",outcome="rate_limited"} 1`,
		`cline_mcp_calls_total{tool="ask_cline",outcome="budget_exceeded"} 1`,
		`cline_mcp_calls_total{tool="review_cline",outcome="ok"} 1`,
		`cline_mcp_refusals_total{reason="rate_limited"} 1`,
		`cline_mcp_refusals_total{reason="budget_exceeded"} 1`,
		`cline_mcp_refusals_total{reason="auth"} 2`,
		"cline_mcp_runs_in_flight 0",
		"cline_mcp_spend_usd_today 1.5",
		"# TYPE cline_mcp_calls_total counter",
		"# TYPE cline_mcp_spend_usd_today gauge",
	)
	if strings.Contains(body, "acme") {
		t.Errorf("a tenant's name in the scrape without PerTenant:\n%s", body)
	}

	m.PerTenant = true
	wantLines(t, scrape(t, m.Handler()),
		`cline_mcp_spend_usd_today{tenant="acme"} 1.5`,
		`cline_mcp_refusals_total{reason="rate_limited",tenant="acme"} 1`,
		`cline_mcp_refusals_total{reason="auth"} 2`,
		`cline_mcp_runs_in_flight{tenant="acme"} 0`,
	)
}

// TestMetricsFormat: every line is a comment or "name{labels} value" with a numeric value, and a
// label value with a quote or newline stays on its line.
func TestMetricsFormat(t *testing.T) {
	m := &Metrics{Admission: &Admission{}, PerTenant: true}
	m.count(run.Tool("a\"b\nc"), "t\\x", &run.Result{Kind: KindRateLimited})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(l, "# TYPE ") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 || !strings.HasPrefix(l, "cline_mcp_") || strings.TrimLeft(l[i+1:], "0123456789.") != "" {
			t.Errorf("not a sample line: %q", l)
		}
	}
	wantLines(t, string(b), `cline_mcp_calls_total{tool="a\"b\nc",outcome="rate_limited"} 1`,
		`cline_mcp_refusals_total{reason="rate_limited",tenant="t\\x"} 1`)
	if resp, err := http.Post(srv.URL, "text/plain", nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v", resp, err)
	}
}
