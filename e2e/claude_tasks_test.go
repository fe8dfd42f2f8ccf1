//go:build e2e && linux

package e2e

import (
	"strings"
	"testing"
)

// TestClaudeCodeTasks: Claude Code 2.1.328 on its 2026-07-28 session with this server, and the
// Tasks extension. Headless (-p) it does not declare the extension on its tools/call (its client
// for it is behind a feature flag that is off for the sdk-cli entrypoint), so the server must
// answer with the plain result and start no task; should it declare it, the call becomes a task
// that Claude Code polls with tasks/get. Either way the model gets the run's answer; the test logs
// which path was taken.
func TestClaudeCodeTasks(t *testing.T) {
	c := newClaudeWorldAt(t, claudeCodeLatest, worldOpts{})
	r := c.run(runOpts{calls: []toolUse{{Name: "mcp__cline__ask_cline", Input: map[string]any{
		"prompt": "fake:slow?seconds=3&interval_ms=200", "cwd": c.work}}}})
	r.wantClean(t)
	results := r.toolResults()
	if len(results) != 1 {
		t.Fatalf("the model got %d tool results, want 1", len(results))
	}
	log := c.log()
	declared := strings.Contains(log, "tasksExtensionDeclared=true")
	if !declared && !strings.Contains(log, "tasksExtensionDeclared=false") {
		t.Fatalf("the server log does not say whether the call declared the extension:\n%s", log)
	}
	started := strings.Contains(log, "task started")
	t.Logf("Claude Code declared the tasks extension: %v; task started: %v; tasks/get in its debug log: %d", declared, started, strings.Count(r.debug, "tasks/get"))
	if started != declared {
		t.Errorf("declared %v, task started %v: want a task exactly for a declaring call", declared, started)
	}
	if !strings.Contains(results[0].text(), "tick 15") {
		t.Errorf("the model's tool result %q, want the run's answer", results[0].text())
	}
}
