package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// jobCall calls cline_job (no cwd) and returns its structuredContent.
func (e *env) jobCall(args map[string]any) map[string]any {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return mcpsession.Structured(e.t, e.sess.Call(ctx, "cline_job", args))
}

// waitJob polls cline_job with the cursor until the job is no longer running, and returns the
// last answer and every progress message seen; an event at or before the cursor fails the test.
func (e *env) waitJob(id string) (map[string]any, []string) {
	e.t.Helper()
	cursor := 0.0
	var seen []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		sc := e.jobCall(map[string]any{"jobId": id, "cursor": cursor})
		evs, _ := sc["events"].([]any)
		for _, ev := range evs {
			m := ev.(map[string]any)
			if seq := m["seq"].(float64); seq <= cursor {
				e.t.Errorf("event %v came again after cursor %v", seq, cursor)
			}
			seen = append(seen, m["text"].(string))
		}
		cursor = sc["nextCursor"].(float64)
		if sc["state"] != "running" {
			return sc, seen
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("job %s still running after 60 s: %v", id, sc)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func jobsArgs(e *env, extra ...string) []string {
	return append([]string{"--jobs-dir", filepath.Join(e.root, "jobs")}, extra...)
}

// TestBackgroundJob: a background call answers at once with a jobId; cline_job gives its progress
// after a cursor (each message once) and, when done, the same result a synchronous call gives;
// the record is a 0600 file that survives a restart and holds no secret the run printed.
func TestBackgroundJob(t *testing.T) {
	e := prepareEnv(t)
	e.start(jobsArgs(e)...)
	start := time.Now()
	_, sc := e.call("ask_cline", map[string]any{"prompt": "fake:slow?seconds=2&interval_ms=200", "background": true})
	id, _ := sc["jobId"].(string)
	if id == "" || sc["state"] != "running" || time.Since(start) > 10*time.Second {
		t.Fatalf("background answer %v after %v", sc, time.Since(start))
	}
	done, events := e.waitJob(id)
	if done["state"] != "succeeded" {
		t.Fatalf("job ended %v", done)
	}
	if len(events) < 3 || !strings.Contains(strings.Join(events, "\n"), "tick") {
		t.Errorf("progress events %q, want the run's", events)
	}
	res, _ := done["result"].(map[string]any)
	if res["ok"] != true || !strings.Contains(res["text"].(string), "tick 10") || res["attempts"] != float64(1) {
		t.Errorf("job result %v, want the run's successful result", res)
	}
	_, sync := e.call("ask_cline", map[string]any{"prompt": "fake:slow?seconds=2&interval_ms=200"})
	if sync["text"] != res["text"] {
		t.Errorf("sync text %q, job text %q", sync["text"], res["text"])
	}

	// A secret the run prints is redacted in the record, which is private.
	_, sec := e.call("ask_cline", map[string]any{"prompt": "fake:secrets?value=sk-live-9876543210fedcbaJOBSEC", "background": true})
	secID := sec["jobId"].(string)
	e.waitJob(secID)
	path := filepath.Join(e.root, "jobs", secID+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sk-live-9876543210fedcbaJOBSEC") {
		i := strings.Index(string(b), "sk-live-9876543210fedcbaJOBSEC")
		t.Errorf("the job record holds the secret the run printed: …%s…", string(b)[max(0, i-300):min(len(b), i+100)])
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("job record mode %v, want 0600", fi.Mode().Perm())
	}

	// After a restart the finished job is still readable.
	if !e.sess.Stop() {
		t.Fatal("the server did not stop cleanly")
	}
	e2 := newEnvLike(t, e, jobsArgs(e)...)
	again := e2.jobCall(map[string]any{"jobId": id, "action": "result"})
	if r, _ := again["result"].(map[string]any); again["state"] != "succeeded" || r["text"] != res["text"] {
		t.Errorf("after a restart: %v", again)
	}
}

// TestBackgroundJobCancelAndIdle: cancel ends a running job cancelled (its process stopped); a
// job whose run says nothing for --job-idle ends failed, naming the limit.
func TestBackgroundJobCancelAndIdle(t *testing.T) {
	e := prepareEnv(t)
	e.start(jobsArgs(e, "--job-idle", "10s")...)
	_, sc := e.call("ask_cline", map[string]any{"prompt": "fake:slow?seconds=60&interval_ms=200", "background": true})
	id := sc["jobId"].(string)
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(e.records()) == 1 }) {
		t.Fatal("the run never started")
	}
	c := e.jobCall(map[string]any{"jobId": id, "action": "cancel"})
	if c["jobId"] != id {
		t.Fatalf("cancel answer %v", c)
	}
	done, _ := e.waitJob(id)
	if done["state"] != "cancelled" {
		t.Errorf("cancelled job ended %v", done["state"])
	}
	pid := e.records()[0].PID
	if !mcpsession.Eventually(10*time.Second, func() bool { return !alive(pid) }) {
		t.Errorf("the cancelled job's CLI %d still runs", pid)
	}

	_, sc = e.call("ask_cline", map[string]any{"prompt": "fake:hang", "background": true})
	idle, _ := e.waitJob(sc["jobId"].(string))
	if idle["state"] != "failed" || !strings.Contains(idle["error"].(string), "said nothing") {
		t.Errorf("an idle job ended %v", idle)
	}
}

// TestBackgroundJobOfAKilledServer: a job whose server is killed is marked failed by the next
// server, never left running.
func TestBackgroundJobOfAKilledServer(t *testing.T) {
	e := prepareEnv(t)
	e.start(jobsArgs(e)...)
	_, sc := e.call("ask_cline", map[string]any{"prompt": "fake:hang", "background": true})
	id := sc["jobId"].(string)
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(e.records()) == 1 }) {
		t.Fatal("the run never started")
	}
	_ = e.sess.Cmd.Process.Signal(syscall.SIGKILL)
	<-e.sess.Exited()
	e2 := newEnvLike(t, e, jobsArgs(e)...)
	got := e2.jobCall(map[string]any{"jobId": id})
	if got["state"] != "failed" || !strings.Contains(got["error"].(string), "stopped before it finished") {
		t.Errorf("the killed server's job: %v", got)
	}
}

// TestLongResultPages: an answer longer than --result-max-chars comes back cut with a note and a
// truncated member; cline_job's pages put the whole text content together again.
func TestLongResultPages(t *testing.T) {
	e := prepareEnv(t)
	e.start(jobsArgs(e, "--result-max-chars", "1000")...)
	long := "fake:echo " + strings.Repeat("0123456789", 450)
	_, sc := e.call("ask_cline", map[string]any{"prompt": long})
	tr, _ := sc["truncated"].(map[string]any)
	if sc["ok"] != true || tr == nil || len([]rune(sc["text"].(string))) > 1100 {
		t.Fatalf("a long answer was not cut: truncated %v, %d chars", tr, len(sc["text"].(string)))
	}
	if w, _ := json.Marshal(sc["warnings"]); !strings.Contains(string(w), "cline_job") {
		t.Errorf("no note on how to read the rest: %s", w)
	}
	var whole strings.Builder
	pages := int(tr["pages"].(float64))
	for p := 1; p <= pages; p++ {
		pg := e.jobCall(map[string]any{"jobId": tr["jobId"], "action": "result", "page": p})
		whole.WriteString(pg["content"].(string))
	}
	if got := whole.String(); !strings.HasPrefix(got, long) || len([]rune(got)) != int(tr["totalChars"].(float64)) {
		t.Errorf("the pages (%d chars) do not give the whole answer back (%v chars)", len(got), tr["totalChars"])
	}
}
