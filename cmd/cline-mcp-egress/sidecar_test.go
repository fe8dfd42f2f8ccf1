package main

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// TestSidecarAddsCredential: the sidecar's provider listener takes the run's request with its
// placeholder key and the provider gets the granted key instead; a grant that names no upstream
// is refused before anything listens.
func TestSidecarAddsCredential(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the sidecar runs in Linux pods")
	}
	var gotAuth []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Values("Authorization")
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	}))
	defer up.Close()
	line, _ := json.Marshal(SidecarGrant{Credential: egress.Credential{Upstream: up.URL, BasePath: "/v1", Endpoints: []string{"POST /echo"},
		Headers: map[string]string{"Authorization": "Bearer sk-real"}}})
	logger := log.New(io.Discard, "", 0)
	dir := t.TempDir()
	pln, err := sidecarServe(line, dir, "127.0.0.1:0", logger)
	if err != nil {
		t.Fatal(err)
	}
	defer pln.Close()
	req, _ := http.NewRequest("POST", "http://"+pln.Addr().String()+"/v1/echo", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer sk-cline-mcp-placeholder-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok /v1/echo" || strings.Join(gotAuth, ",") != "Bearer sk-real" {
		t.Errorf("got %d %q, the provider saw %q", resp.StatusCode, body, gotAuth)
	}
	// The credential is lent to its endpoints only: another path of the upstream is refused.
	resp, err = http.Post("http://"+pln.Addr().String()+"/v1/files", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /v1/files got %d, want 403", resp.StatusCode)
	}
	// The summary counts the answer and the refusal, and ends the grant.
	var buf strings.Builder
	if code := sidecarSummaryMain([]string{"-dir", dir}, &buf); code != 0 {
		t.Fatalf("summary: exit %d", code)
	}
	var sum egress.Summary
	if err := json.Unmarshal([]byte(buf.String()), &sum); err != nil || sum.Answers != 1 || len(sum.Refused) != 1 || sum.Refused[0].Count != 1 {
		t.Errorf("summary %s (%v): want one answer and one refusal", buf.String(), err)
	}
	if _, err := sidecarServe([]byte(`{"credential":{"upstream":""}}`), t.TempDir(), "127.0.0.1:0", logger); err == nil {
		t.Error("a grant without an upstream was accepted")
	}
}
