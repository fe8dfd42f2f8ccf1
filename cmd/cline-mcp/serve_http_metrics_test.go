package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestHTTPServiceMetrics: /metrics answers without a token, after a call that ran, one refused
// for the tenant's concurrency and one request with a wrong token, and counts each; it names no
// tenant by default.
func TestHTTPServiceMetrics(t *testing.T) {
	fx := startHTTP(t)
	a1, a2 := fx.mustClient(t, alpha.token), fx.mustClient(t, alpha.token)
	b := fx.mustClient(t, beta.token)
	if sc, _ := call(t, b, "ask_cline", map[string]any{"prompt": "hello"}); sc["ok"] != true {
		t.Fatalf("beta's call: %v", sc)
	}
	done := make(chan map[string]any, 1)
	go func() { sc, _ := call(t, a1, "ask_cline", map[string]any{"prompt": "block"}); done <- sc }()
	waitFor(t, func() bool { return fx.adm.Snapshot("alpha").Running == 1 })
	// alpha's one queue place: the call may still run when the test ends, and its context then
	// ends it, so its error is not the test's
	go func() {
		_, _ = a2.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline", Arguments: map[string]any{"prompt": "block"}}})
	}()
	waitFor(t, func() bool { return fx.adm.Snapshot("alpha").Queued == 1 })
	if sc, _ := call(t, fx.mustClient(t, alpha.token), "ask_cline", map[string]any{"prompt": "block"}); sc["kind"] != "rate_limited" {
		t.Fatalf("third alpha call: %v, want rate_limited", sc)
	}
	if _, err := fx.client(t, "wrong-token"); err == nil {
		t.Fatal("a wrong token was let in")
	}
	body := get(t, strings.TrimSuffix(fx.url, mcpPath)+metricsPath)
	for _, want := range []string{
		`cline_mcp_calls_total{tool="ask_cline",outcome="ok"} 1`,
		`cline_mcp_calls_total{tool="ask_cline",outcome="rate_limited"} 1`,
		`cline_mcp_refusals_total{reason="rate_limited"} 1`,
		"cline_mcp_runs_in_flight 1",
		"cline_mcp_calls_queued 1",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(body, `cline_mcp_refusals_total{reason="auth"} `) || strings.Contains(body, `{reason="auth"} 0`) {
		t.Errorf("the wrong token is not counted:\n%s", body)
	}
	if strings.Contains(body, "alpha") || strings.Contains(body, "beta") {
		t.Errorf("a tenant's name in the default scrape:\n%s", body)
	}
	close(fx.inner.release)
	if sc := <-done; sc["ok"] != true {
		t.Errorf("alpha's first call: %v", sc)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}
