package main

import (
	"bufio"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// TestSidecarSettle: between two turns of a kept pod, a settle without a credential counts the
// turn's answers and leaves the run's provider requests without the key (refused, the provider
// never asked); a settle with the next turn's credential counts that refusal and lends the new
// key. A credential for another upstream settles nothing, and the summary at the end counts only
// what came after the last settle.
func TestSidecarSettle(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the sidecar runs in Linux pods")
	}
	var mu sync.Mutex
	var seen []string // the Authorization the provider got, per request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	defer up.Close()
	cred := func(key string) egress.Credential {
		return egress.Credential{Upstream: up.URL, BasePath: "/v1", Endpoints: []string{"POST /echo"},
			Headers: map[string]string{"Authorization": "Bearer " + key}}
	}
	line, _ := json.Marshal(SidecarGrant{Credential: cred("sk-one")})
	dir := t.TempDir()
	pln, err := sidecarServe(line, dir, "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer pln.Close()
	ask := func(want int) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+pln.Addr().String()+"/v1/echo", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer sk-cline-mcp-placeholder-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("provider request: got %d, want %d", resp.StatusCode, want)
		}
		if want == http.StatusForbidden && resp.Header.Get("X-Cline-Mcp-Egress") != "refused" {
			t.Error("the refusal is not the proxy's")
		}
	}
	settleWith := func(c *egress.Credential) SidecarSettled {
		t.Helper()
		in, _ := json.Marshal(SidecarSettle{Credential: c})
		var out strings.Builder
		if code := sidecarSettleMain([]string{"-dir", dir}, strings.NewReader(string(in)+"\n"), &out); code != 0 {
			t.Fatalf("sidecar-settle: exit %d", code)
		}
		var ans SidecarSettled
		if err := json.Unmarshal([]byte(out.String()), &ans); err != nil {
			t.Fatalf("sidecar-settle answered %q: %v", out.String(), err)
		}
		return ans
	}

	ask(http.StatusOK)
	ans := settleWith(nil)
	if ans.Error != "" || ans.Summary == nil || ans.Summary.Answers != 1 || len(ans.Summary.Refused) != 0 {
		t.Errorf("first settle: got %+v, want one answer and no refusal", ans)
	}
	ask(http.StatusForbidden) // between turns: no key is lent
	two := cred("sk-two")
	ans = settleWith(&two)
	if ans.Error != "" || ans.Summary == nil || ans.Summary.Answers != 0 || len(ans.Summary.Refused) != 1 ||
		ans.Summary.Refused[0].Target != egress.ProviderHost+":80" {
		t.Errorf("re-arm: got %+v, want the one refusal between turns", ans)
	}
	ask(http.StatusOK)
	other := cred("sk-three")
	other.Upstream = "http://127.0.0.2:1"
	if ans = settleWith(&other); !strings.Contains(ans.Error, "not the granted") || ans.Summary != nil {
		t.Errorf("another upstream: got %+v, want an error", ans)
	}
	ask(http.StatusOK) // the refused settle left sk-two lent
	mu.Lock()
	if got := strings.Join(seen, ","); got != "Bearer sk-one,Bearer sk-two,Bearer sk-two" {
		t.Errorf("the provider saw %q, want sk-one, then sk-two twice", got)
	}
	mu.Unlock()

	var buf strings.Builder
	if code := sidecarSummaryMain([]string{"-dir", dir}, &buf); code != 0 {
		t.Fatalf("summary: exit %d", code)
	}
	var sum egress.Summary
	if err := json.Unmarshal([]byte(buf.String()), &sum); err != nil || sum.Answers != 2 || len(sum.Refused) != 0 {
		t.Errorf("summary %s (%v): want the two answers since the re-arm", buf.String(), err)
	}
	if ans = settleWith(nil); ans.Error == "" {
		t.Errorf("settle after the summary ended the grant: got %+v, want an error", ans)
	}
}

// TestSidecarSettleMain: sidecar-settle fails without a sidecar to reach, and passes a line
// the sidecar cannot read on as the sidecar's error (which names nothing of the line).
func TestSidecarSettleMain(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the sidecar runs in Linux pods")
	}
	var out strings.Builder
	if code := sidecarSettleMain([]string{"-dir", t.TempDir()}, strings.NewReader("{\"credential\":null}\n"), &out); code != 1 || out.Len() != 0 {
		t.Errorf("no sidecar: got exit %d and %q, want exit 1 and nothing", code, out.String())
	}
	up := httptest.NewServer(http.NotFoundHandler())
	defer up.Close()
	line, _ := json.Marshal(SidecarGrant{Credential: egress.Credential{Upstream: up.URL, Endpoints: []string{"POST /echo"}}})
	dir := t.TempDir()
	pln, err := sidecarServe(line, dir, "127.0.0.1:0", log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	defer pln.Close()
	const bad = `{"credential":{"headers":{"Authorization":"Bearer sk-secret"}`
	if code := sidecarSettleMain([]string{"-dir", dir}, strings.NewReader(bad), &out); code != 0 {
		t.Fatalf("got exit %d, want 0", code)
	}
	var ans SidecarSettled
	if err := json.Unmarshal([]byte(out.String()), &ans); err != nil || ans.Error == "" || strings.Contains(ans.Error, "sk-") {
		t.Errorf("got %q (%v), want an error that does not quote the line", out.String(), err)
	}
}

// TestSidecarSettlesOverStdin: after the grant, each further line of the sidecar's stdin is a
// settle, answered on its stdout (the executor's kept attach): the first one counts the turn's
// answer, the next, with a credential for another upstream, is refused, and a line once the
// sidecar's sockets are gone gets an error answer rather than none.
func TestSidecarSettlesOverStdin(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the sidecar runs in Linux pods")
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer up.Close()
	grant, _ := json.Marshal(SidecarGrant{Credential: egress.Credential{Upstream: up.URL, BasePath: "/v1",
		Endpoints: []string{"POST /echo"}, Headers: map[string]string{"Authorization": "Bearer sk-one"}}})
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go sidecarMain([]string{"-dir", dir, "-provider", "127.0.0.1:0"}, inR, outW) // runs until the test binary ends
	out := bufio.NewReader(outR)
	answer := func(line []byte) string {
		t.Helper()
		if _, err := inW.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() { text, _ := out.ReadString('\n'); got <- text }()
		select {
		case text := <-got:
			return text
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer on the sidecar's stdout to %.40s…", line)
		}
		return ""
	}
	if got := answer(grant); !strings.Contains(got, `"granted"`) {
		t.Fatalf("the grant: %q", got)
	}
	var ans SidecarSettled
	if err := json.Unmarshal([]byte(answer([]byte(`{"credential":null}`))), &ans); err != nil || ans.Error != "" || ans.Summary == nil {
		t.Errorf("a settle over stdin: %+v %v, want a summary", ans, err)
	}
	other, _ := json.Marshal(SidecarSettle{Credential: &egress.Credential{Upstream: "https://elsewhere.example", Headers: map[string]string{"Authorization": "Bearer sk-two"}}})
	if got := answer(other); !strings.Contains(got, `"error"`) || strings.Contains(got, "sk-two") {
		t.Errorf("a settle for another upstream: %q, want an error that does not quote the key", got)
	}
	if err := os.Remove(filepath.Join(dir, "settle.sock")); err != nil {
		t.Fatal(err)
	}
	if got := answer([]byte(`{"credential":null}`)); !strings.Contains(got, `"error"`) {
		t.Errorf("a settle without the socket: %q, want an error answer", got)
	}
}
