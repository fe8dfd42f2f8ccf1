//go:build e2e && linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestClaudeCode runs Claude Code (the pinned npm release, headless: `claude -p`) as a second
// real MCP client: in a private network namespace it talks to a fake Anthropic Messages API on
// loopback, which makes the model call our tools; Claude Code starts cline-mcp, which drives the
// fake Cline. Every session must end cleanly: exit 0, no MCP protocol fault in Claude Code's
// debug log, nothing left running.
//
// It runs the pinned release and the newest one. The newest defers our tools behind its
// ToolSearch tool: there the fake model first searches with the words a user would use for the
// tool (toolQueries), reads the tool_reference results and calls the tool only if the search
// found it (see searchingModel); and the session must have negotiated protocol 2026-07-28
// through server/discover. The newest release runs once more opening with initialize, the path it
// falls back to for a server that does not answer server/discover in time.
func TestClaudeCode(t *testing.T) {
	for _, v := range []string{claudeCodeVersion, claudeCodeLatest, claudeCodeLatest + legacyHandshake} {
		t.Run(v, func(t *testing.T) { claudeCodeSuite(t, v) })
	}
}

func claudeCodeSuite(t *testing.T, v string) {
	t.Run("tools offered with their schemas; the answer reaches the model intact (streaming)", func(t *testing.T) {
		answerIntact(t, v, false)
	})
	t.Run("the answer reaches the model intact (non-streaming)", func(t *testing.T) {
		answerIntact(t, v, true)
	})
	t.Run("failures reach the model as is_error with the kind", func(t *testing.T) { claudeFailures(t, v) })
	t.Run("a long call with progress completes", func(t *testing.T) { claudeLongCall(t, v) })
	t.Run("MCP_TOOL_TIMEOUT cancels the run", func(t *testing.T) { claudeToolTimeout(t, v, nil) })
	// Progress flows (every 50 ms) when the timeout fires: nothing for the token after the cancel.
	t.Run("MCP_TOOL_TIMEOUT cancels a run that reports progress", func(t *testing.T) {
		claudeToolTimeout(t, v, []string{"CLINE_MCP_TEST_PROGRESS_HEARTBEAT=100ms"})
	})
	t.Run("Ctrl-C during a call leaves nothing running", func(t *testing.T) { claudeInterrupted(t, v) })
}

// intactAnswer has what a careless bridge would mangle: non-ASCII, both quotes, backslashes,
// HTML-ish characters, tabs and newlines.
const intactAnswer = "Grüße, 世界 🌍 — \"double\" and 'single' quotes,\nback\\slash <b>&amp;</b>\ttab\n\nlast line"

func answerIntact(t *testing.T, v string, nonStreaming bool) {
	c := newClaudeWorldAt(t, v, worldOpts{})
	r := c.run(runOpts{truncate: nonStreaming, calls: []toolUse{{Name: "mcp__cline__ask_cline", Input: map[string]any{
		"prompt": "Answer fake:pong?text=" + url.QueryEscape(intactAnswer), "cwd": c.work}}}})
	r.wantClean(t)

	results := r.toolResults()
	if len(results) != 1 {
		t.Fatalf("the model got %d tool results, want 1", len(results))
	}
	res := results[0]
	if res.IsError {
		t.Fatalf("is_error for a successful call: %s", res.text())
	}
	// Claude Code gives the model the JSON of structuredContent, in our order: answer first.
	content := res.text()
	if !strings.HasPrefix(content, `{"ok":true,"text":`) {
		t.Errorf("the model reads %.200q…, want the JSON of structuredContent starting with ok and the answer", content)
	}
	var sc map[string]any
	if err := json.Unmarshal([]byte(content), &sc); err != nil {
		t.Fatalf("tool_result content is not JSON: %v\n%s", err, content)
	}
	if sc["text"] != intactAnswer {
		t.Errorf("the model read the answer\n%q\nwant\n%q", sc["text"], intactAnswer)
	}
	t.Logf("what the model read: %s", content)

	reqs := r.api.Requests()
	streamed := slices.ContainsFunc(reqs, func(q apiRequest) bool { return q.Stream })
	unstreamed := slices.ContainsFunc(reqs, func(q apiRequest) bool { return !q.Stream })
	if nonStreaming && !unstreamed {
		t.Errorf("Claude Code never fell back to a non-streaming request (%d requests)", len(reqs))
	}
	if !nonStreaming {
		if unstreamed || !streamed {
			t.Errorf("want streaming requests only, got streamed %v, non-streaming %v", streamed, unstreamed)
		}
		if c.version == claudeCodeVersion { // the newest release defines our tools only once searched: TestClaudeCodeToolSearch
			wantToolSchemas(t, reqs[0])
		}
	}
}

// wantToolSchemas checks what the model is offered: our three run tools with their input schemas,
// and the two tools that follow their sessions and background jobs.
func wantToolSchemas(t *testing.T, req apiRequest) {
	t.Helper()
	want := map[string][]string{ // tool → required properties
		"mcp__cline__ask_cline":           {"prompt"},
		"mcp__cline__apply_cline_edits":   {"prompt", "cwd"},
		"mcp__cline__ask_cline_workspace": {"prompt", "cwd"},
	}
	for _, name := range []string{"mcp__cline__cline_sessions", "mcp__cline__cline_job"} {
		if !slices.ContainsFunc(req.Body.Tools, func(tl apiTool) bool { return tl.Name == name }) {
			t.Errorf("the model is not offered %s", name)
		}
	}
	for _, tool := range req.Body.Tools {
		req, ok := want[tool.Name]
		if !ok {
			continue
		}
		delete(want, tool.Name)
		s := tool.InputSchema
		props, _ := s["properties"].(map[string]any)
		var names []string
		for k := range props {
			names = append(names, k)
		}
		slices.Sort(names)
		wantNames := []string{"background", "cwd", "isolation", "maxCostUsd", "maxIterations", "model", "prompt",
			"protocol", "provider", "sessionId", "thinking", "timeoutSeconds"}
		if tool.Name == "mcp__cline__ask_cline" {
			wantNames = append(wantNames, "systemPrompt")
			slices.Sort(wantNames)
		}
		if fmt.Sprint(names) != fmt.Sprint(wantNames) {
			t.Errorf("%s: the model is offered properties %v, want %v", tool.Name, names, wantNames)
		}
		if got := fmt.Sprint(s["required"]); got != fmt.Sprint(req) {
			t.Errorf("%s: required %s, want %v", tool.Name, got, req)
		}
		if th, _ := props["thinking"].(map[string]any); fmt.Sprint(th["enum"]) != "[none low medium high xhigh]" {
			t.Errorf("%s: thinking schema %v", tool.Name, th)
		}
		if ts, _ := props["timeoutSeconds"].(map[string]any); fmt.Sprint(ts["maximum"]) != "300" {
			t.Errorf("%s: timeoutSeconds schema %v", tool.Name, ts)
		}
		if !strings.Contains(tool.Description, "Cline") {
			t.Errorf("%s: description %q", tool.Name, tool.Description)
		}
	}
	for name := range want {
		t.Errorf("the model is not offered %s (tools: %d)", name, len(req.Body.Tools))
	}
}

// claudeFailures: a failed run, invalid arguments and a failed apply each reach the model as a
// tool_result with is_error and our text, which names the kind first.
func claudeFailures(t *testing.T, v string) {
	c := newClaudeWorldAt(t, v, worldOpts{})
	r := c.run(runOpts{calls: []toolUse{
		{Name: "mcp__cline__ask_cline", Input: map[string]any{"prompt": "Go fake:http_401", "cwd": c.work}},
		{Name: "mcp__cline__ask_cline", Input: map[string]any{"prompt": "Go", "cwd": c.work, "timeoutSeconds": 301}},
		{Name: "mcp__cline__apply_cline_edits", Input: map[string]any{"prompt": "Edit it", "cwd": c.work}},
	}})
	r.wantClean(t)
	results := r.toolResults()
	if len(results) != 3 {
		t.Fatalf("the model got %d tool results, want 3", len(results))
	}
	for i, want := range []*regexp.Regexp{
		regexp.MustCompile(`^Kind: non_zero_exit\nMessage: .*authentication failed`),
		regexp.MustCompile(`^Kind: launch_failed\nMessage: invalid arguments: .*timeoutSeconds`),
		regexp.MustCompile(`^\{\n  "ok": false,\n  "kind": "workspace_not_git",`),
	} {
		res := results[i]
		if !res.IsError {
			t.Errorf("result %d: is_error is false: %.300s", i+1, res.text())
		}
		if !want.MatchString(res.text()) {
			t.Errorf("result %d: the model read %.400q, want it to match %s", i+1, res.text(), want)
		}
	}
}

// claudeLongCall: a call that runs for many heartbeats, sending progress all along, completes
// and its answer reaches the model; every notification was written before the result.
func claudeLongCall(t *testing.T, v string) {
	c := newClaudeWorldAt(t, v, worldOpts{env: []string{"CLINE_MCP_TEST_PROGRESS_HEARTBEAT=1s"}})
	r := c.run(runOpts{calls: []toolUse{{Name: "mcp__cline__ask_cline", Input: map[string]any{
		"prompt": "Work fake:slow?seconds=12&interval_ms=400", "cwd": c.work}}}})
	r.wantClean(t)
	results := r.toolResults()
	if len(results) != 1 || results[0].IsError || !strings.Contains(results[0].text(), `tick 30`) {
		t.Fatalf("the model did not get the long call's answer: %+v", results)
	}
	m := regexp.MustCompile(`progressSent=(\d+)`).FindStringSubmatch(c.log())
	if m == nil {
		t.Fatalf("the server log has no progress count")
	}
	var sent int
	fmt.Sscan(m[1], &sent)
	if sent < 12 {
		t.Errorf("the server sent %d progress notifications during a 12 s call, want >= 12 (heartbeat 1 s, throttle 500 ms)", sent)
	}
	t.Logf("progress notifications sent: %d", sent)
}

// claudeToolTimeout: Claude Code's MCP_TOOL_TIMEOUT expires → it sends notifications/cancelled;
// the Cline process is stopped, the server withholds the response (Claude Code already gave the
// model a timeout error) and logs the outcome. With env (test hooks) the server reports
// progress, and nothing for the token may follow the cancel.
func claudeToolTimeout(t *testing.T, v string, env []string) {
	c := newClaudeWorldAt(t, v, worldOpts{env: env})
	r := c.run(runOpts{env: []string{"MCP_TOOL_TIMEOUT=3000"}, calls: []toolUse{{Name: "mcp__cline__ask_cline", Input: map[string]any{
		"prompt": "Wait fake:hang", "cwd": c.work}}},
		holdFinal: func() bool { return strings.Contains(c.log(), "the client cancelled a request") }})
	if env == nil {
		r.wantClean(t)
	} else {
		r.wantNoProgressAfterCancel(t, c.log())
	}
	results := r.toolResults()
	if len(results) != 1 || !results[0].IsError || !strings.Contains(results[0].text(), "timed out") {
		t.Fatalf("want one is_error tool result saying the tool timed out, got %+v", results)
	}
	recs := c.records()
	if len(recs) != 1 {
		t.Fatalf("got %d Cline runs, want 1", len(recs))
	}
	if err := syscall.Kill(recs[0].PID, 0); err == nil {
		t.Errorf("the Cline process %d is still alive after the timeout", recs[0].PID)
	}
	log := c.log()
	for _, want := range []string{"the client cancelled a request", "kind=cancelled", "response withheld"} {
		if !strings.Contains(log, want) {
			t.Errorf("the server log lacks %q", want)
		}
	}
}

// claudeInterrupted: the user interrupts Claude Code (SIGINT) while a call runs. Claude Code
// cancels the call and stops the server; the server stops Cline and withholds the response;
// nothing of the session survives (the world's leak check runs after Claude Code exited).
func claudeInterrupted(t *testing.T, v string) {
	c := newClaudeWorldAt(t, v, worldOpts{})
	r := c.run(runOpts{
		calls: []toolUse{{Name: "mcp__cline__ask_cline", Input: map[string]any{"prompt": "Wait fake:hang", "cwd": c.work}}},
		interruptWhen: func() bool { // the fake Cline records its start first thing
			st, err := os.Stat(c.record)
			return err == nil && st.Size() > 0
		},
	})
	if !r.interrupted {
		t.Fatal("Cline never started, so Claude Code was not interrupted")
	}
	r.wantNoFaults(t)
	recs := c.records()
	if len(recs) != 1 {
		t.Fatalf("got %d Cline runs, want 1", len(recs))
	}
	if err := syscall.Kill(recs[0].PID, 0); err == nil {
		t.Errorf("the Cline process %d outlived Claude Code", recs[0].PID)
	}
	t.Logf("claude exit: %v; server log:\n%s", r.err, c.log())
	// Claude Code signals the server and aborts the call at the same moment: the server sees the
	// signal or the cancel first, withholds the answer either way.
	for _, want := range []string{"kind=cancelled", "response withheld", "stdio session closed"} {
		if !strings.Contains(c.log(), want) {
			t.Errorf("the server log lacks %q", want)
		}
	}
}
