//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// stopLimit is how long a cancel may take to stop the run: "within about 2 s" (README); the
// margin absorbs a noisy 2-core machine and, in Docker, the engine's stop round trip.
func stopLimit(iso string) time.Duration {
	if iso == docker {
		return 5 * time.Second
	}
	return 3 * time.Second
}

// children lists processes started by the world's server (host or container), not the server.
func (w *world) children() []int {
	var out []int
	for _, p := range mcpsession.ProcsWithEnv("E2E_RUN_TAG=" + w.tag) {
		if p != w.sess.Cmd.Process.Pid {
			out = append(out, p)
		}
	}
	return out
}

// cancelDuringRun: notifications/cancelled stops the whole run (process group or container).
// timeoutSeconds 121 is accepted (the largest values are rejected, not clamped).
func cancelDuringRun(t *testing.T, w *world) {
	ctx, cancel := context.WithCancel(context.Background())
	done := w.callAsync(ctx, "ask_cline", map[string]any{"prompt": "go fake:hang", "timeoutSeconds": 121}, "tok-cancel")
	if !w.running(30 * time.Second) {
		cancel()
		t.Fatal("the CLI never started")
	}
	t0 := time.Now()
	cancel()
	<-done
	if !mcpsession.Eventually(10*time.Second, func() bool { return len(w.children()) == 0 }) {
		t.Fatalf("the run still has processes %v %v after the cancel", w.children(), time.Since(t0))
	}
	d := time.Since(t0)
	t.Logf("%s: run stopped %v after notifications/cancelled", w.iso, d.Round(time.Millisecond))
	if d > stopLimit(w.iso) {
		t.Errorf("cancel took %v to stop the run, want <= %v", d, stopLimit(w.iso))
	}
	w.wantWithheld("")
	if strings.Contains(w.sess.Stderr(), "attempts=2") {
		t.Errorf("a cancelled run was retried")
	}
}

// wantWithheld asserts the contract for a call the client cancelled: no response reaches the
// wire (MCP: the receiver SHOULD NOT respond), and the server's log records the outcome — kind
// cancelled, msg when given — and that the response was withheld.
func (w *world) wantWithheld(msg string) {
	t := w.t
	t.Helper()
	subs := []string{"kind=cancelled", "response withheld"}
	if msg != "" {
		subs = append(subs, msg)
	}
	if !mcpsession.Eventually(10*time.Second, func() bool {
		l := w.sess.Stderr()
		for _, sub := range subs {
			if !strings.Contains(l, sub) {
				return false
			}
		}
		return true
	}) {
		t.Errorf("the server log does not record the cancelled call (want %q)", subs)
	}
	if strings.Contains(w.wire(), `"kind":"cancelled"`) {
		t.Errorf("the cancelled call was answered on the wire")
	}
}

// cancelDuringBackoff: a cancel while waiting to retry ends the call at once, with no retry.
func cancelDuringBackoff(t *testing.T, w *world) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := w.callAsync(ctx, "ask_cline", map[string]any{"prompt": "go fake:http_429"}, "tok-backoff")
	if !mcpsession.Eventually(60*time.Second, func() bool { return w.progressContains("tok-backoff", "retrying") }) {
		t.Fatal("no 'retrying' progress notification")
	}
	t0 := time.Now()
	cancel()
	<-done
	w.wantWithheld("cancelled while waiting to retry")
	if d := time.Since(t0); d > stopLimit(w.iso) {
		t.Errorf("cancel during the backoff took %v", d)
	}
	if w.iso == host && len(w.records()) != 1 {
		t.Errorf("got %d runs, want 1 (no retry after the cancel)", len(w.records()))
	}
	if w.iso == docker && len(w.children()) != 0 {
		t.Errorf("a retry started after the cancel: %v", w.children())
	}
}

// cancelQueued: with --max-concurrent 1, a call queued behind a running one (it is told its place
// in line) is cancelled before it ever starts Cline. In the docker column the queued call asks for
// Docker: no container is ever created for it.
func cancelQueued(t *testing.T, w *world) {
	first := w.callAsync(context.Background(), "ask_cline", map[string]any{"prompt": "go fake:slow?seconds=5&interval_ms=300"}, "tok-first")
	if !mcpsession.Eventually(30*time.Second, func() bool { return len(w.records()) == 1 }) {
		t.Fatal("the first run never started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := map[string]any{"prompt": "queued call fake:pong", "model": "m-queued"}
	if w.iso == docker {
		args = map[string]any{"prompt": "queued call fake:pong", "isolation": "docker"}
	}
	done := w.callAsync(ctx, "ask_cline", args, "tok-queued")
	if !mcpsession.Eventually(30*time.Second, func() bool { return w.progressContains("tok-queued", "queued, position 1") }) {
		t.Fatal("the second call was not told it is queued")
	}
	if len(w.records()) != 1 || len(mustContainers(t, w)) != 0 {
		t.Fatal("the queued call started although the first run holds the only slot")
	}
	cancel()
	<-done
	w.wantWithheld("cancelled while it was queued")
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}
	if n := len(w.records()); n != 1 {
		t.Errorf("got %d CLI runs, want 1: the cancelled queued call must never start", n)
	}
}

// mustContainers lists the containers of this world's server (Docker column only).
func mustContainers(t *testing.T, w *world) []string {
	if dockerErr != nil {
		return nil
	}
	ids, err := mcpsession.Containers("label=cline-mcp.run", "ancestor="+fakeImage)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, id := range ids {
		if strings.Contains(containerInstance(id), fmt.Sprintf("-%d-", w.sess.Cmd.Process.Pid)) {
			mine = append(mine, id)
		}
	}
	return mine
}

func (w *world) progress(token string) []map[string]any {
	var out []map[string]any
	for _, n := range w.sess.Notifications("notifications/progress") {
		f := n.Params.AdditionalFields
		if fmt.Sprint(f["progressToken"]) == token {
			out = append(out, f)
		}
	}
	return out
}

func (w *world) progressCount(token string) int { return len(w.progress(token)) }

func (w *world) progressContains(token, sub string) bool {
	for _, f := range w.progress(token) {
		if m, _ := f["message"].(string); strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

// graceGrandchild: a grandchild keeps the CLI's stdout open for 60 s; the call settles ~500 ms
// after the CLI exits and nothing of the run survives (the world's leak check).
func graceGrandchild(t *testing.T, w *world) {
	t0 := time.Now()
	res, sc := w.call("ask_cline", map[string]any{"prompt": "go fake:grandchild_holds_stdio?seconds=60"})
	wantResult(t, res, sc, "", 1)
	d := time.Since(t0)
	t.Logf("%s: settled after %v", w.iso, d.Round(time.Millisecond))
	if d > 10*time.Second {
		t.Errorf("the call waited %v for a grandchild holding stdio, want ~500 ms after the exit", d)
	}
	if w.iso == host {
		pg := w.records()[0].PGID
		if groupExists(pg) && !mcpsession.Eventually(5*time.Second, func() bool { return !groupExists(pg) }) {
			t.Errorf("process group %d still has members", pg)
		}
	}
}

// heartbeat: a long silent model call still produces progress at least every heartbeat.
func heartbeat(t *testing.T, w *world) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := w.sess.CallErr(ctx, "ask_cline", w.args(map[string]any{"prompt": "go fake:slow?seconds=4&interval_ms=4000"}), "tok-hb")
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("got %s", mcpsession.Text(res))
	}
	var last float64
	beats := 0
	for _, f := range w.progress("tok-hb") {
		p, _ := f["progress"].(float64)
		if p <= last {
			t.Errorf("progress not increasing: %v after %v", p, last)
		}
		last = p
		if m, _ := f["message"].(string); strings.HasPrefix(m, "still working") {
			beats++
		}
	}
	if beats < 2 {
		t.Errorf("got %d heartbeats during ~4 s of silence with a 1 s heartbeat, want >= 2", beats)
	}
}

// secretsRedacted: secrets the CLI prints (patterns, and the saved keys of providers.json) are
// redacted in text, message, tails, warnings and progress — checked on the raw wire.
func secretsRedacted(t *testing.T, w *world) {
	v := "LIVE7q2x9Wv4k1Zp0aBcDeFgSECRET"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, prompt := range []string{"go fake:secrets?linger_ms=900&value=" + v, "go fake:echo sk-native-456 and sk-test-123 fake:secrets?linger_ms=900"} {
		res, err := w.sess.CallErr(ctx, "ask_cline", w.args(map[string]any{"prompt": prompt}), "tok-secret")
		if err != nil {
			t.Fatal(err)
		}
		_ = res
	}
	ctxFail, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	// The same secrets in a failure: message and tails.
	if _, err := w.sess.CallErr(ctxFail, "ask_cline", w.args(map[string]any{"prompt": "go fake:finish_error_exit0?transient=false&message=bad+key+sk-" + v}), nil); err != nil {
		t.Fatal(err)
	}
	wire := w.wire()
	for _, leak := range []string{v, v[:14], "sk-test-123", "sk-native-456"} {
		if strings.Contains(wire, leak) {
			i := strings.Index(wire, leak)
			t.Errorf("the wire carries the secret %q: …%s…", leak, wire[max(0, i-120):min(len(wire), i+60)])
		}
	}
	if !strings.Contains(wire, "REDACTED") {
		t.Errorf("nothing was redacted; the scenario printed no secret?")
	}
	if w.progressCount("tok-secret") == 0 {
		t.Errorf("no progress notifications: the progress path was not exercised")
	}
	for _, f := range w.progress("tok-secret") {
		b, _ := json.Marshal(f)
		if strings.Contains(string(b), v[:14]) {
			t.Errorf("a progress notification carries the secret: %s", b)
		}
	}
}

// hugeOutput: 200 MiB of CLI output through the server: it stays responsive (tools/list
// answered during the run) and its peak RSS stays under 64 MiB.
func hugeOutput(t *testing.T, w *world) {
	const size = 200 << 20
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		mu       sync.Mutex
		maxPing  time.Duration
		pings    int
		stopPing = make(chan struct{})
		pinged   = make(chan struct{})
	)
	go func() {
		defer close(pinged)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopPing:
				return
			case <-tick.C:
			}
			t0 := time.Now()
			// tools/list, not ping: mcp-go's Ping sends nothing on the current protocol version.
			if _, err := w.sess.Client.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
				t.Errorf("tools/list during the huge run: %v", err)
				return
			}
			mu.Lock()
			pings++
			maxPing = max(maxPing, time.Since(t0))
			mu.Unlock()
		}
	}()
	t0 := time.Now()
	res, err := w.sess.CallErr(ctx, "ask_cline", w.args(map[string]any{"prompt": fmt.Sprintf("go fake:huge?bytes=%d", size), "timeoutSeconds": 300}), "tok-huge")
	close(stopPing)
	<-pinged
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(t0)
	sc := mcpsession.Structured(t, res)
	wantResult(t, res, sc, "", 1)
	if mcpsession.Str(sc, "text") != "huge output done" {
		t.Errorf("got text %.100q", mcpsession.Str(sc, "text"))
	}
	hwm, err := mcpsession.ProcStatusKiB(w.sess.Cmd.Process.Pid, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%s: 200 MiB in %v (%.0f MiB/s), server VmHWM %d KiB, %d tools/list answered during the run, slowest %v", w.iso, d.Round(time.Millisecond),
		float64(size>>20)/d.Seconds(), hwm, pings, maxPing.Round(10*time.Microsecond))
	if hwm >= 64<<10 {
		t.Errorf("server peak RSS %d KiB, want < 64 MiB", hwm)
	}
	if pings == 0 || maxPing > 2*time.Second {
		t.Errorf("server not responsive during the run: %d tools/list calls, slowest %v", pings, maxPing)
	}
	if b, _ := json.Marshal(res); len(b) > 64<<10 {
		t.Errorf("the result is %d bytes; tails must be bounded", len(b))
	}
}
