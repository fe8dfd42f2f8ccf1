package ci

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeService answers review_cline calls as `cline-mcp serve --http` does (one POST of a
// JSON-RPC tools/call, a JSON or server-sent-event answer), with what the test sets.
type fakeService struct {
	srv   *httptest.Server
	token string
	mu    sync.Mutex
	reply func(w http.ResponseWriter, id json.RawMessage)
	calls []map[string]any // the arguments of each call
}

func newFakeService(t *testing.T, token string) *fakeService {
	s := &fakeService{token: token}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cline-mcp"`)
			http.Error(w, `{"error": "unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") ||
			json.Unmarshal(b, &req) != nil || req.Method != "tools/call" || req.Params.Name != "review_cline" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.calls = append(s.calls, req.Params.Arguments)
		reply := s.reply
		s.mu.Unlock()
		reply(w, req.ID)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// result is a JSON-RPC answer of id carrying this structuredContent.
func result(id json.RawMessage, sc string, isError bool) string {
	return fmt.Sprintf(`{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "x"}], "isError": %t, "structuredContent": %s}}`, id, isError, sc)
}

func reviewResult(parsed bool, findings string) string {
	return fmt.Sprintf(`{"ok": true, "text": "t", "warnings": [], "review": {"target": "base:main", "base": "b", "head": "h", "files": [], "parsed": %t, "summary": "s", "findings": %s}}`, parsed, findings)
}

// TestGateService: with a service URL the gate makes one review_cline call to the service
// (token in the header, the checkout's path, the target, a timeout the service accepts) and
// reads its verdict from the answer, JSON or server-sent events, into the same SARIF log;
// every answer that is not a review is no-verdict, and a finding's hostile path gets no location.
func TestGateService(t *testing.T) {
	needTools(t)
	w := newWorld(t)
	svc := newFakeService(t, "svc-token.1")
	findings := `[{"severity": "high", "file": "app.go", "line": 5, "title": "division by zero", "detail": "panics"},` +
		`{"severity": "low", "file": "/etc/passwd", "line": 1, "title": "abs"},` +
		`{"severity": "low", "file": "../outside.go", "line": 1, "title": "up"},` +
		`{"severity": "info", "file": "https://evil.example/x", "title": "url"}]`
	jsonReply := func(sc string, isError bool) func(http.ResponseWriter, json.RawMessage) {
		return func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, result(id, sc, isError))
		}
	}
	cases := []struct {
		name, verdict, findings, reason string
		code                            int
		reply                           func(http.ResponseWriter, json.RawMessage)
		vars                            map[string]string
	}{
		{name: "findings", verdict: "findings", findings: "1", code: 1, reply: jsonReply(reviewResult(true, findings), false)},
		{name: "passed, as server-sent events", verdict: "passed", findings: "0", code: 0,
			reply: func(w http.ResponseWriter, id json.RawMessage) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\nevent: message\ndata: %s\n\n",
					`{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}`,
					result(id, reviewResult(true, `[{"severity": "medium", "file": "app.go", "line": 4, "title": "naming"}]`), false))
			}},
		{name: "unreadable findings block", verdict: "no-verdict", reason: "no readable findings block", code: 2,
			reply: jsonReply(reviewResult(false, `[]`), false)},
		{name: "refused call", verdict: "no-verdict", reason: "kind rate_limited", code: 2,
			reply: jsonReply(`{"ok": false, "kind": "rate_limited", "retryable": true, "message": "at its limit"}`, true)},
		{name: "hostile kind", verdict: "no-verdict", reason: "kind unknown", code: 2,
			reply: jsonReply(`{"ok": false, "kind": "x\n::set-output name=verdict::passed"}`, true)},
		{name: "JSON-RPC error", verdict: "no-verdict", reason: "JSON-RPC error", code: 2,
			reply: func(w http.ResponseWriter, id json.RawMessage) {
				_, _ = fmt.Fprintf(w, `{"jsonrpc": "2.0", "id": %s, "error": {"code": -32602, "message": "bad"}}`, id)
			}},
		{name: "garbage", verdict: "no-verdict", reason: "not a JSON-RPC result", code: 2,
			reply: func(w http.ResponseWriter, _ json.RawMessage) { _, _ = io.WriteString(w, "<html>proxy error</html>") }},
		{name: "service gone mid-answer", verdict: "no-verdict", reason: "closed the connection before it answered", code: 2,
			reply: func(w http.ResponseWriter, _ json.RawMessage) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\": \"2.0\", \"method\": \"notifications/progress\", \"params\": {\"progressToken\": 1, \"progress\": 1}}\n\n")
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = conn.Close() // the service's process ends: the stream stops mid-answer
				}
			}},
		{name: "server error", verdict: "no-verdict", reason: "HTTP 502", code: 2,
			reply: func(w http.ResponseWriter, _ json.RawMessage) { w.WriteHeader(http.StatusBadGateway) }},
		{name: "wrong token", verdict: "no-verdict", reason: "HTTP 401", code: 2, reply: jsonReply(reviewResult(true, `[]`), false),
			vars: map[string]string{"GATE_SERVICE_TOKEN": "other"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc.mu.Lock()
			svc.reply, svc.calls = c.reply, nil
			svc.mu.Unlock()
			vars := map[string]string{"GATE_SERVICE_URL": svc.srv.URL + "/mcp", "GATE_SERVICE_TOKEN": svc.token, "GATE_ARGS": "",
				"GATE_BINARY": "", "GATE_TIMEOUT": "600", "GATE_PROMPT": "look hard"}
			for k, v := range c.vars {
				vars[k] = v
			}
			r := runGate(t, w, vars)
			r.want(t, w, c.verdict, c.findings, c.code)
			if !strings.Contains(r.out["reason"], c.reason) {
				t.Errorf("reason %q, want %q", r.out["reason"], c.reason)
			}
			if c.verdict != "no-verdict" {
				validSARIF(t, r.out["sarif-file"], len(jsonArray(t, r.out["sarif-file"])))
			}
			if strings.Contains(r.stderr, svc.token) {
				t.Errorf("the token is in the log")
			}
			if left, _ := filepath.Glob(filepath.Join(w.root, "tmp", "cline-gate-auth.*")); len(left) > 0 {
				t.Errorf("the token's file is left: %v", left)
			}
			svc.mu.Lock()
			defer svc.mu.Unlock()
			if c.name == "wrong token" {
				return
			}
			if len(svc.calls) != 1 {
				t.Fatalf("%d calls, want 1", len(svc.calls))
			}
			a := svc.calls[0]
			if a["cwd"] != w.work || a["target"] != "base:main" || a["timeoutSeconds"] != float64(300) || a["prompt"] != "look hard" {
				t.Errorf("arguments %v", a)
			}
		})
	}
	// Of the four findings only app.go has a location: an absolute path, a .. escape and a URL do not.
	svc.mu.Lock()
	svc.reply = jsonReply(reviewResult(true, findings), false)
	svc.mu.Unlock()
	r := runGate(t, w, map[string]string{"GATE_SERVICE_URL": svc.srv.URL + "/mcp", "GATE_SERVICE_TOKEN": svc.token, "GATE_ARGS": ""})
	b, _ := os.ReadFile(r.out["sarif-file"])
	if n := strings.Count(string(b), `"uri"`); n != 1 || !strings.Contains(string(b), `"uri": "app.go"`) {
		t.Errorf("%d locations, want app.go only:\n%s", n, b)
	}
}

// jsonArray is the results of the SARIF log at path.
func jsonArray(t *testing.T, path string) []any {
	t.Helper()
	var log struct {
		Runs []struct{ Results []any }
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &log); err != nil || len(log.Runs) != 1 {
		t.Fatalf("SARIF %v: %s", err, b)
	}
	return log.Runs[0].Results
}
