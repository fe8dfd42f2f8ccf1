//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// taskClient is a client of the Tasks extension (io.modelcontextprotocol/tasks) of our own: raw
// JSON-RPC over the built server's stdio, on protocol 2026-07-28 (server/discover, then every
// request with its _meta envelope), as no Go SDK speaks the extension.
type taskClient struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	mu   sync.Mutex
	next int
	resp map[string]chan map[string]any
}

func (e *env) startTaskClient(args ...string) *taskClient {
	t := e.t
	argv, environ := e.server(nil, args...)
	cmd := exec.Command(bins.ClineMCP, argv...)
	cmd.Env, cmd.Dir = environ, e.work
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &taskClient{t: t, cmd: cmd, in: in, resp: map[string]chan map[string]any{}}
	done := make(chan struct{})
	go c.read(out, done)
	t.Cleanup(func() {
		_ = in.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	return c
}

// read routes responses to their waiting requests; anything else on stdout must be JSON-RPC.
func (c *taskClient) read(out io.Reader, done chan struct{}) {
	defer close(done)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			c.t.Errorf("server wrote a non-JSON-RPC line: %q", sc.Text())
			continue
		}
		if _, isReq := m["method"]; isReq {
			continue // notifications
		}
		c.mu.Lock()
		ch := c.resp[fmt.Sprint(m["id"])]
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// envelope is the _meta of a 2026-07-28 request; tasks adds the extension to its capabilities.
func envelope(tasks bool) map[string]any {
	caps := map[string]any{}
	if tasks {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "task-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
}

// request sends one request (params get the envelope) and returns its response.
func (c *taskClient) request(method string, params map[string]any, tasks bool) map[string]any {
	c.t.Helper()
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan map[string]any, 1)
	c.resp[fmt.Sprint(id)] = ch
	c.mu.Unlock()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = envelope(tasks)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	select {
	case m := <-ch:
		return m
	case <-time.After(90 * time.Second):
		c.t.Fatalf("no answer to %s in 90 s", method)
		return nil
	}
}

// result is a response's result; an error response fails the test.
func (c *taskClient) result(m map[string]any) map[string]any {
	c.t.Helper()
	res, ok := m["result"].(map[string]any)
	if !ok {
		c.t.Fatalf("want a result, got %v", m)
	}
	return res
}

func (c *taskClient) errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

// get polls tasks/get until the task's status is no longer working: until[0] when given, or
// a terminal status.
func (c *taskClient) get(id string, until ...string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		tk := c.result(c.request("tasks/get", map[string]any{"taskId": id}, true))
		if tk["resultType"] != "complete" || tk["taskId"] != id {
			c.t.Fatalf("tasks/get answered %v", tk)
		}
		st, _ := tk["status"].(string)
		terminal := st == "completed" || st == "failed" || st == "cancelled"
		if st != "working" && (len(until) == 0 || st == until[0] || terminal) {
			return tk
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s still %s after 90 s", id, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startTask calls a tool declaring the extension and checks the CreateTaskResult.
func (c *taskClient) startTask(tool string, args map[string]any) string {
	c.t.Helper()
	tk := c.result(c.request("tools/call", map[string]any{"name": tool, "arguments": args}, true))
	id, _ := tk["taskId"].(string)
	if tk["resultType"] != "task" || tk["status"] != "working" || len(id) != 32 || tk["createdAt"] == nil ||
		tk["lastUpdatedAt"] == nil || mcpsession.Num(tk, "ttlMs") <= 0 || mcpsession.Num(tk, "pollIntervalMs") <= 0 || tk["content"] != nil {
		c.t.Fatalf("tools/call declaring the extension answered %v, want a working task", tk)
	}
	return id
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTasksExtension: over stdio on protocol 2026-07-28, the server declares the Tasks extension
// and never the 2025 task API; a tools/call that declares the extension answers at once with a
// task, tasks/get polls it to the same result the synchronous call gives; a call that does not
// declare it gets a plain result; tasks/cancel stops the run (the fake CLI's process gone); an
// unknown task id is invalid params, and tasks/get without the declaration is -32021.
func TestTasksExtension(t *testing.T) {
	e := prepareEnv(t)
	c := e.startTaskClient(jobsArgs(e)...)
	caps := c.result(c.request("server/discover", nil, false))["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] == nil {
		t.Errorf("server/discover capabilities %v do not declare the tasks extension", caps)
	}
	if caps["tasks"] != nil {
		t.Errorf("server/discover declares the 2025 task API: %v", caps["tasks"])
	}

	args := func(prompt string) map[string]any { return map[string]any{"prompt": prompt, "cwd": e.work} }
	const slow = "fake:slow?seconds=2&interval_ms=200"
	id := c.startTask("ask_cline", args(slow))
	tk := c.get(id)
	res, _ := tk["result"].(map[string]any)
	if tk["status"] != "completed" || res == nil || res["isError"] == true {
		t.Fatalf("task ended %v", tk)
	}
	plain := c.result(c.request("tools/call", map[string]any{"name": "ask_cline", "arguments": args(slow)}, false))
	if plain["resultType"] == "task" || plain["taskId"] != nil || plain["content"] == nil {
		t.Fatalf("a call that did not declare the extension got %v", plain)
	}
	got, want := res["structuredContent"].(map[string]any), plain["structuredContent"].(map[string]any)
	if got["text"] != want["text"] || !strings.Contains(fmt.Sprint(got["text"]), "tick 10") {
		t.Errorf("the task's answer %q, the synchronous call's %q", got["text"], want["text"])
	}

	long := c.startTask("ask_cline", args("fake:slow?seconds=60&interval_ms=200"))
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(e.records()) == 3 }) {
		t.Fatal("the task's run never started")
	}
	pid := e.records()[2].PID
	if ack := c.result(c.request("tasks/cancel", map[string]any{"taskId": long}, true)); ack["resultType"] != "complete" {
		t.Errorf("tasks/cancel answered %v", ack)
	}
	if st := c.get(long)["status"]; st != "cancelled" {
		t.Errorf("the cancelled task ended %v", st)
	}
	if !mcpsession.Eventually(10*time.Second, func() bool { return !alive(pid) }) {
		t.Errorf("the cancelled task's CLI %d still runs", pid)
	}

	unknown := strings.Repeat("ab", 16)
	if code := c.errorCode(c.request("tasks/get", map[string]any{"taskId": unknown}, true)); code != -32602 {
		t.Errorf("tasks/get of an unknown task: code %v, want -32602", code)
	}
	if code := c.errorCode(c.request("tasks/cancel", map[string]any{"taskId": unknown}, true)); code != -32602 {
		t.Errorf("tasks/cancel of an unknown task: code %v, want -32602", code)
	}
	if code := c.errorCode(c.request("tasks/get", map[string]any{"taskId": id}, false)); code != -32021 {
		t.Errorf("tasks/get without declaring the extension: code %v, want -32021", code)
	}
}

// TestTaskResultFits: a task's result is cut to --result-max-chars like a synchronous one's, and
// points to its pages, which cline_job reads with the taskId as jobId.
func TestTaskResultFits(t *testing.T) {
	e := prepareEnv(t)
	const limit = 20000
	c := e.startTaskClient(jobsArgs(e, "--result-max-chars", fmt.Sprint(limit))...)
	c.result(c.request("server/discover", nil, false))
	prompt := "fake:echo " + filler(100000-len("fake:echo "))
	id := c.startTask("ask_cline", map[string]any{"prompt": prompt, "cwd": e.work})
	tk := c.get(id)
	res, _ := tk["result"].(map[string]any)
	if tk["status"] != "completed" || res == nil {
		t.Fatalf("task ended %v", tk)
	}
	var sc bytes.Buffer // as a client re-serialises it: no HTML escaping
	enc := json.NewEncoder(&sc)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res["structuredContent"]); err != nil {
		t.Fatal(err)
	}
	n := utf8.RuneCount(bytes.TrimSuffix(sc.Bytes(), []byte("\n")))
	for _, block := range res["content"].([]any) {
		n += utf8.RuneCountInString(fmt.Sprint(block.(map[string]any)["text"]))
	}
	if n > limit {
		t.Errorf("the task's result is %d characters, more than --result-max-chars %d", n, limit)
	}
	tr, _ := mcpsession.Dig(res, "structuredContent", "truncated").(map[string]any)
	if tr["jobId"] != id || mcpsession.Num(tr, "pages") < 2 {
		t.Fatalf("the cut result's truncated %v, want pages of the task's job", tr)
	}
	page := c.result(c.request("tools/call", map[string]any{"name": "cline_job", "arguments": map[string]any{"jobId": id, "action": "result", "page": 1}}, false))
	if pc, _ := page["structuredContent"].(map[string]any); !strings.HasPrefix(prompt, fmt.Sprint(pc["content"])[:100]) {
		t.Errorf("page 1 of the task's result %v does not begin the answer", pc)
	}
	t.Logf("100,000 characters: the task's result is %d characters, %v pages", n, tr["pages"])
}

// TestTaskInputRequired: a permission the run asks for (--ask-commands) makes the task
// input_required with the question as an elicitation in inputRequests; tasks/update accepting it
// lets the command run, and the task completes.
func TestTaskInputRequired(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	c := e.startTaskClient(acpServerArgs(e, jobsArgs(e, "--ask-commands", "--ask-timeout", "60s")...)...)
	c.result(c.request("server/discover", nil, false))
	id := c.startTask("apply_cline_edits", map[string]any{"prompt": "fake:run_commands?cmd=touch%20answered.txt", "cwd": e.work})
	tk := c.get(id, "input_required")
	reqs, _ := tk["inputRequests"].(map[string]any)
	q, _ := reqs["p1"].(map[string]any)
	if tk["status"] != "input_required" || q["method"] != "elicitation/create" ||
		!strings.Contains(fmt.Sprint(mcpsession.Dig(q, "params", "message")), "touch answered.txt") {
		t.Fatalf("task %v, want input_required asking for the command", tk)
	}
	if exists(filepath.Join(e.work, "answered.txt")) {
		t.Fatal("the command ran before the answer")
	}
	ack := c.result(c.request("tasks/update", map[string]any{"taskId": id,
		"inputResponses": map[string]any{"p1": map[string]any{"action": "accept", "content": map[string]any{"allow": true}}, "p99": map[string]any{"action": "accept"}}}, true))
	if ack["resultType"] != "complete" {
		t.Errorf("tasks/update answered %v", ack)
	}
	done := c.get(id, "completed")
	if !exists(filepath.Join(e.work, "answered.txt")) {
		t.Errorf("after accepting: task %v, the command did not run", done["status"])
	}
}
