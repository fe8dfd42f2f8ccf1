package mcpserver

import (
	"bufio"
	"context"
	"io"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// declaring is modern's _meta with the Tasks extension in the request's capabilities.
func declaring(params map[string]any) map[string]any {
	m := modern("2026-07-28")
	m["_meta"].(map[string]any)["io.modelcontextprotocol/clientCapabilities"] = map[string]any{
		"extensions": map[string]any{tasksExtension: map[string]any{}}}
	for k, v := range params {
		m[k] = v
	}
	return m
}

// TestTasksDeclaredOnly: the server declares the Tasks extension, never the 2025 task API (legacy
// initialize too); only run tools become tasks — cline_job and a call with invalid arguments get
// their usual answers even when the request declares the extension; without a job store there
// is no extension: tasks/get is an unknown method and a declaring call gets a plain result.
func TestTasksDeclaredOnly(t *testing.T) {
	s := serveStdio(t)
	init := s.call(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"}})
	caps := init["result"].(map[string]any)["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext[tasksExtension] == nil || caps["tasks"] != nil {
		t.Errorf("initialize capabilities %v: want the tasks extension and no 2025 tasks capability", caps)
	}
	job := s.call(2, "tools/call", declaring(map[string]any{"name": "cline_job", "arguments": map[string]any{"jobId": "nope"}}))
	if r := job["result"].(map[string]any); r["resultType"] == "task" || r["isError"] != true {
		t.Errorf("cline_job declaring the extension: %v, want its usual error answer", r)
	}
	bad := s.call(3, "tools/call", declaring(map[string]any{"name": "ask_cline", "arguments": map[string]any{"prompt": ""}}))
	if r := bad["result"].(map[string]any); r["resultType"] == "task" || r["isError"] != true {
		t.Errorf("invalid arguments declaring the extension: %v, want the usual error answer", r)
	}
	ok := s.call(4, "tools/call", declaring(map[string]any{"name": "ask_cline", "arguments": map[string]any{"prompt": "ping", "cwd": t.TempDir()}}))
	if r := ok["result"].(map[string]any); r["resultType"] != "task" {
		t.Errorf("a run tool declaring the extension: %v, want a task", r)
	}
	missing := s.call(5, "tasks/get", declaring(nil))
	if e, _ := missing["error"].(map[string]any); e["code"] != float64(-32602) {
		t.Errorf("tasks/get without taskId: %v, want -32602", missing)
	}

	n := serveStdioNoJobs(t)
	plain := n.call(1, "tools/call", declaring(map[string]any{"name": "ask_cline", "arguments": map[string]any{"prompt": "ping", "cwd": t.TempDir()}}))
	if r := plain["result"].(map[string]any); r["resultType"] == "task" || r["content"] == nil {
		t.Errorf("without jobs a declaring call got %v, want a plain result", r)
	}
	get := n.call(2, "tasks/get", declaring(map[string]any{"taskId": "0123456789abcdef0123456789abcdef"}))
	if e, _ := get["error"].(map[string]any); e["code"] != float64(-32601) {
		t.Errorf("without jobs tasks/get answered %v, want method not found", get)
	}
}

// serveStdioNoJobs is serveStdio without a job store.
func serveStdioNoJobs(t *testing.T) *stdio {
	t.Helper()
	srv := New(Options{Runner: okRunner{}, Version: "1.2.3", Sessions: noSessions{}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), inR, outW); _ = outW.Close() }()
	t.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	})
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &stdio{t: t, in: inW, out: sc}
}

// TestTaskOfJobStates: the task of each end of a job, as the spec asks: a run that ended, even
// failed, is completed with its tool result (isError); failed, with a JSON-RPC error, only for a
// job without a result (its server stopped); cancelled carries no result.
func TestTaskOfJobStates(t *testing.T) {
	s := New(Options{Runner: okRunner{}, Jobs: &jobs.Store{Dir: t.TempDir(), Owner: "test"}})
	failedRun, err := store(run.AskCline, run.Result{Kind: "timeout", Message: "the attempt ran out of time"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	base := jobs.Job{ID: "0123456789abcdef0123456789abcdef", Tool: string(run.AskCline), Created: now, Updated: now}
	for _, tc := range []struct {
		state, errText string
		result         []byte
		want           string
	}{
		{jobs.Failed, "", failedRun, "completed"},
		{jobs.Failed, "the server that ran this job stopped before it finished", nil, "failed"},
		{jobs.Cancelled, "cancelled", failedRun, "cancelled"},
	} {
		j := base
		j.State, j.Error, j.Result = tc.state, tc.errText, tc.result
		tk := s.taskOf(j)
		if tk.Status != tc.want {
			t.Errorf("%s job (result %v): task %s, want %s", tc.state, tc.result != nil, tk.Status, tc.want)
		}
		switch tk.Status {
		case "completed":
			if tk.Result == nil || !tk.Result.IsError || tk.Error != nil {
				t.Errorf("completed task of a failed run: result %+v error %+v, want the isError result", tk.Result, tk.Error)
			}
		case "failed":
			if tk.Error == nil || tk.Error.Code != -32603 || tk.Error.Message != tc.errText || tk.Result != nil {
				t.Errorf("failed task: error %+v result %+v, want -32603 with the job's error", tk.Error, tk.Result)
			}
		case "cancelled":
			if tk.Result != nil || tk.Error != nil {
				t.Errorf("cancelled task carries %+v / %+v", tk.Result, tk.Error)
			}
		}
		if tk.TTLMs <= 0 || tk.PollIntervalMs <= 0 || tk.CreatedAt == "" {
			t.Errorf("task %+v lacks ttlMs, pollIntervalMs or createdAt", tk)
		}
	}
}
