package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/service"
)

// fakeInner stands in for the runner behind the service: "block" waits for release (or the
// call's end), "cost:<usd>" reports that spend, "progress" reports a step and waits until the
// client received it; anything else answers PONG.
type fakeInner struct {
	release  chan struct{}
	heard    chan struct{} // a progress notification reached the client
	started  atomic.Int32
	mu       sync.Mutex
	maxCosts []float64
}

func (f *fakeInner) Do(ctx context.Context, call run.Call, progress run.Progress) run.Result {
	f.started.Add(1)
	f.mu.Lock()
	f.maxCosts = append(f.maxCosts, call.MaxCostUSD)
	f.mu.Unlock()
	switch p := call.Prompt; {
	case p == "block":
		select {
		case <-f.release:
		case <-ctx.Done():
			return run.Result{Kind: "cancelled", Message: "cancelled"}
		}
	case strings.HasPrefix(p, "cost:"):
		var usd float64
		_ = json.Unmarshal([]byte(strings.TrimPrefix(p, "cost:")), &usd)
		return run.Result{OK: true, Text: "spent", Attempts: 1, Usage: &run.Usage{TotalCost: usd}}
	case p == "progress":
		progress("step one")
		select {
		case <-f.heard:
		case <-ctx.Done():
		}
	}
	return run.Result{OK: true, Text: "PONG " + call.Prompt, Attempts: 1}
}

type tenantSpec struct {
	name, token string
	limits      service.Limits
}

func writeTokens(t *testing.T, path string, specs ...tenantSpec) {
	t.Helper()
	var f struct {
		Tenants []map[string]any `json:"tenants"`
	}
	for _, s := range specs {
		f.Tenants = append(f.Tenants, map[string]any{"name": s.name, "tokenSha256": []string{service.Hash(s.token)},
			"maxConcurrent": s.limits.MaxConcurrent, "maxQueued": s.limits.MaxQueued, "maxJobs": s.limits.MaxJobs,
			"maxSpendUsdPerDay": s.limits.MaxSpendUSDPerDay})
	}
	b, _ := json.Marshal(f)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // as a Secret update swaps the file
		t.Fatal(err)
	}
}

var (
	alpha = tenantSpec{"alpha", "alpha-token-1", service.Limits{MaxConcurrent: 1, MaxQueued: 1, MaxJobs: 1, MaxSpendUSDPerDay: 1}}
	beta  = tenantSpec{"beta", "beta-token-1", service.Limits{MaxConcurrent: 2, MaxQueued: 0, MaxJobs: 2}}
)

type httpFixture struct {
	url    string
	tokens string
	inner  *fakeInner
	adm    *service.Admission
}

func startHTTP(t *testing.T) *httpFixture {
	t.Helper()
	dir := t.TempDir()
	fx := &httpFixture{tokens: filepath.Join(dir, "tokens.json"), inner: &fakeInner{release: make(chan struct{}), heard: make(chan struct{}, 1)}, adm: &service.Admission{}}
	writeTokens(t, fx.tokens, alpha, beta)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	toks, err := service.LoadTokens(fx.tokens, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	js := &jobs.Store{Dir: filepath.Join(dir, "jobs"), Owner: "test"}
	h := httpService(ctx, httpParts{cfg: &config{isolation: "docker", maxConcurrent: 4}, log: log, inner: fx.inner, jobs: js, auth: toks, admission: fx.adm})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		select {
		case <-fx.inner.release:
		default:
			close(fx.inner.release)
		}
		srv.Close()
		cancel()
		js.Stop(context.Background())
	})
	fx.url = srv.URL + mcpPath
	return fx
}

func (fx *httpFixture) client(t *testing.T, token string) (*client.Client, error) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(fx.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		return nil, err
	}
	_, err = c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}})
	return c, err
}

func (fx *httpFixture) mustClient(t *testing.T, token string) *client.Client {
	t.Helper()
	c, err := fx.client(t, token)
	if err != nil {
		t.Fatalf("initialize with a valid token: %v", err)
	}
	return c
}

// call calls a tool and returns its structuredContent.
func call(t *testing.T, c *client.Client, tool string, args map[string]any) (map[string]any, *mcp.CallToolResult) {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var sc map[string]any
	_ = json.Unmarshal(b, &sc)
	return sc, res
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	return tc.Text
}

// TestHTTPServiceTokens: without a token, with a wrong one, or with two, the service answers 401
// and no call reaches the runner; with a tenant's token the tools are listed (no cline_sessions)
// and ask_cline answers with its progress on the request's own stream.
func TestHTTPServiceTokens(t *testing.T) {
	fx := startHTTP(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for name, hdr := range map[string][]string{"none": nil, "wrong": {"Bearer nope"}, "basic": {"Basic " + alpha.token}, "two": {"Bearer " + alpha.token, "Bearer " + beta.token}} {
		req, _ := http.NewRequest(http.MethodPost, fx.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for _, h := range hdr {
			req.Header.Add("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: got %d %q, want 401 with a challenge", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if strings.Contains(string(b), alpha.token) || strings.Contains(string(b), "nope") {
			t.Errorf("%s: the answer echoes the token: %s", name, b)
		}
	}
	// No standalone stream: in mcp-go's stateless mode one GET stream would be the session every
	// later POST shares, carrying every caller's progress to whoever opened it.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, fx.url, nil)
		req.Header.Set("Authorization", "Bearer "+beta.token)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s with a valid token: got %d, want 405", method, resp.StatusCode)
		}
	}
	if _, err := fx.client(t, "wrong"); !errors.Is(err, transport.ErrAuthorizationRequired) {
		t.Errorf("mcp-go client with a wrong token: got %v, want ErrAuthorizationRequired", err)
	}
	c := fx.mustClient(t, alpha.token)
	tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if !names["ask_cline"] || !names["apply_cline_edits"] || !names["cline_job"] || names["cline_sessions"] {
		t.Errorf("got tools %v, want the run tools and cline_job, not cline_sessions", names)
	}
	var notes atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) && n.Params.AdditionalFields["progressToken"] == "tok-1" {
			if notes.Add(1) == 1 {
				fx.inner.heard <- struct{}{}
			}
		}
	})
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline",
		Arguments: map[string]any{"prompt": "progress"}, Meta: &mcp.Meta{ProgressToken: "tok-1"}}})
	if err != nil || res.IsError || !strings.Contains(text(res), "PONG progress") {
		t.Fatalf("ask_cline: got %v %+v, want PONG", err, res)
	}
	if notes.Load() < 1 {
		t.Errorf("got %d progress notifications, want at least 1", notes.Load())
	}
	if sc, _ := call(t, c, "ask_cline", map[string]any{"prompt": "x", "isolation": "host"}); sc["kind"] != "launch_failed" {
		t.Errorf("isolation host: got %v, want launch_failed (the service runs only in containers)", sc)
	}
	if got := fx.inner.started.Load(); got != 1 {
		t.Errorf("the runner ran %d calls, want 1 (refused ones never reach it)", got)
	}
}

// TestHTTPServiceSaturation: a tenant with one slot and one place in its queue gets a third call
// refused at once (rate_limited, retryable, retryAfterSeconds) while its first run still runs;
// another tenant is not held up.
func TestHTTPServiceSaturation(t *testing.T) {
	fx := startHTTP(t)
	a1, a2, a3 := fx.mustClient(t, alpha.token), fx.mustClient(t, alpha.token), fx.mustClient(t, alpha.token)
	var wg sync.WaitGroup
	results := make([]map[string]any, 2)
	for i, c := range []*client.Client{a1, a2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = call(t, c, "ask_cline", map[string]any{"prompt": "block"})
		}()
		waitFor(t, func() bool { s := fx.adm.Snapshot("alpha"); return s.Running == 1 && s.Queued == i })
	}
	sc, _ := call(t, a3, "ask_cline", map[string]any{"prompt": "block"})
	if sc["kind"] != "rate_limited" || sc["retryable"] != true || sc["retryAfterSeconds"] == nil {
		t.Errorf("third call: got %v, want rate_limited, retryable, retryAfterSeconds", sc)
	}
	if got := fx.inner.started.Load(); got != 1 {
		t.Errorf("runs started when the refusal came back: %d, want 1 (the first, still running)", got)
	}
	b := fx.mustClient(t, beta.token)
	if sc, _ := call(t, b, "ask_cline", map[string]any{"prompt": "hello"}); sc["ok"] != true {
		t.Errorf("another tenant's call: got %v, want ok", sc)
	}
	close(fx.inner.release)
	wg.Wait()
	for i, r := range results {
		if r["ok"] != true {
			t.Errorf("alpha call %d: got %v, want ok", i+1, r)
		}
	}
}

// TestHTTPServiceRotation: a new token file takes effect without a restart (the old token is
// refused, the new one works); a broken one leaves the last good file in force.
func TestHTTPServiceRotation(t *testing.T) {
	fx := startHTTP(t)
	fx.mustClient(t, alpha.token)
	rotated := alpha
	rotated.token = "alpha-token-2"
	writeTokens(t, fx.tokens, rotated, beta)
	if _, err := fx.client(t, alpha.token); !errors.Is(err, transport.ErrAuthorizationRequired) {
		t.Errorf("old token after rotation: got %v, want ErrAuthorizationRequired", err)
	}
	c := fx.mustClient(t, rotated.token)
	if sc, _ := call(t, c, "ask_cline", map[string]any{"prompt": "hi"}); sc["ok"] != true {
		t.Errorf("call with the new token: got %v", sc)
	}
	if err := os.WriteFile(fx.tokens, []byte(`{"tenants": [{"name": "alpha", "tokenSha256": ["not-a-hash"]`), 0o600); err != nil {
		t.Fatal(err)
	}
	fx.mustClient(t, rotated.token)
	if _, err := fx.client(t, "anything"); !errors.Is(err, transport.ErrAuthorizationRequired) {
		t.Errorf("after a broken file: got %v, want ErrAuthorizationRequired", err)
	}
}

// TestHTTPServiceSpendPerDay: a tenant's runs count against its daily limit; each run may spend
// only what is left, and past it calls are refused with budget_exceeded until midnight UTC.
func TestHTTPServiceSpendPerDay(t *testing.T) {
	fx := startHTTP(t)
	c := fx.mustClient(t, alpha.token)
	for i := range 2 {
		if sc, _ := call(t, c, "ask_cline", map[string]any{"prompt": "cost:0.6"}); sc["ok"] != true {
			t.Fatalf("call %d: got %v", i+1, sc)
		}
	}
	sc, res := call(t, c, "ask_cline", map[string]any{"prompt": "cost:0.1"})
	if sc["kind"] != "budget_exceeded" || sc["retryAfterSeconds"] == nil || !strings.Contains(text(res), "maxSpendUsdPerDay") {
		t.Errorf("past the day's limit: got %v, want budget_exceeded naming maxSpendUsdPerDay", sc)
	}
	fx.inner.mu.Lock()
	defer fx.inner.mu.Unlock()
	if len(fx.inner.maxCosts) != 2 || fx.inner.maxCosts[0] != 1 || fx.inner.maxCosts[1] < 0.39 || fx.inner.maxCosts[1] > 0.41 {
		t.Errorf("maxCostUsd handed to the runs: got %v, want [1 0.4]", fx.inner.maxCosts)
	}
}

// TestHTTPServiceJobsPerTenant: another tenant can neither read nor cancel a tenant's job, and a
// tenant past maxJobs is refused at once.
func TestHTTPServiceJobsPerTenant(t *testing.T) {
	fx := startHTTP(t)
	a, b := fx.mustClient(t, alpha.token), fx.mustClient(t, beta.token)
	sc, _ := call(t, a, "ask_cline", map[string]any{"prompt": "block", "background": true})
	id, _ := sc["jobId"].(string)
	if id == "" {
		t.Fatalf("background call: got %v, want a jobId", sc)
	}
	for _, action := range []string{"status", "cancel"} {
		if _, res := call(t, b, "cline_job", map[string]any{"jobId": id, "action": action}); !res.IsError || !strings.Contains(text(res), "no such job") {
			t.Errorf("beta %s of alpha's job: got %q, want no such job", action, text(res))
		}
	}
	if sc, _ := call(t, a, "ask_cline", map[string]any{"prompt": "x", "background": true}); sc["kind"] != "rate_limited" {
		t.Errorf("alpha's second job (maxJobs 1): got %v, want rate_limited", sc)
	}
	if sc, _ := call(t, a, "cline_job", map[string]any{"jobId": id}); sc["state"] != "running" {
		t.Errorf("alpha's own job: got %v, want running (beta's cancel must not reach it)", sc)
	}
	close(fx.inner.release)
	waitFor(t, func() bool {
		sc, _ := call(t, a, "cline_job", map[string]any{"jobId": id})
		return sc["state"] == "succeeded"
	})
	if got := fx.adm.Snapshot("alpha").Jobs; got != 0 {
		t.Errorf("alpha's jobs after the job ended: %d, want 0", got)
	}
}

// TestCheckService: the service refuses a host floor, a non-loopback address without tokens, and
// --ask-commands.
func TestCheckService(t *testing.T) {
	for _, tc := range []struct {
		iso, addr, tokens string
		ok                bool
	}{
		{"docker", "127.0.0.1:0", "", true},
		{"kubernetes", "localhost:8080", "", true},
		{"docker", "0.0.0.0:8080", "t.json", true},
		{"host", "127.0.0.1:0", "t.json", false},
		{"docker", "0.0.0.0:8080", "", false},
		{"docker", ":8080", "", false},
	} {
		cfg := &config{isolation: tc.iso, service: serviceFlags{addr: tc.addr, tokens: tc.tokens}}
		if err := checkService(cfg); (err == nil) != tc.ok {
			t.Errorf("%+v: got %v, want ok=%v", tc, err, tc.ok)
		}
	}
	ask := &config{isolation: "docker", askCommands: true, service: serviceFlags{addr: "127.0.0.1:0", tokens: "t.json"}}
	if err := checkService(ask); err == nil {
		t.Error("--ask-commands with --http: got no error")
	}
}

// waitFor polls cond (state that other goroutines reach) until it holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
