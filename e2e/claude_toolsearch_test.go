//go:build e2e && linux

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// searchTable is what a user asks for, in their words, and the tool that does it. Each query
// must find its tool among the results of Claude Code's ToolSearch (five by default: all of
// them are loaded for the model).
var searchTable = []struct{ query, tool string }{
	{"ask question about code", "ask_cline"},
	{"explain code", "ask_cline"},
	{"cline ask", "ask_cline"},
	{"edit files", "apply_cline_edits"},
	{"implement feature", "apply_cline_edits"},
	{"fix bug", "apply_cline_edits"},
	{"refactor code", "apply_cline_edits"},
	{"analyse repository worktree", "ask_cline_workspace"},
	{"analyze repository", "ask_cline_workspace"},
	{"review changes", "review_cline"},
	{"review my uncommitted work", "review_cline"},
	{"code review pull request", "review_cline"},
	{"cline ask", "review_cline"},
	{"cline review", "review_cline"},
	{"background job status", "cline_job"},
	{"check job progress", "cline_job"},
	{"cancel background run", "cline_job"},
	{"read long result pages", "cline_job"},
	{"continue conversation session", "cline_sessions"},
	{"list sessions", "cline_sessions"},
	{"follow up question earlier conversation", "cline_sessions"},
}

// TestClaudeCodeToolSearch runs the newest Claude Code with tool search at its default: the
// model sees our tools' names and the server's instructions, and finds a tool's definition with
// ToolSearch, which ranks the deferred tools (ours and Claude Code's own) on their names,
// descriptions and search hints.
func TestClaudeCodeToolSearch(t *testing.T) {
	t.Run("every tool is found by the words a user would use", claudeSearchTable)
	t.Run("a background job and the sessions, found and called through search", claudeSearchJob)
}

// claudeSearchTable: one session whose model runs every query of searchTable through the real
// ToolSearch; each expected tool must be among the results. The tools found are then defined for
// the model with defer_loading and their schemas, and the instructions name all six.
func claudeSearchTable(t *testing.T) {
	c := newClaudeWorldAt(t, claudeCodeLatest, worldOpts{})
	var steps []step
	for _, q := range searchTable {
		steps = append(steps, step{search: q.query})
	}
	r := c.run(runOpts{script: searchingModel(steps)})
	r.wantClean(t)
	reqs := r.api.Requests()
	last := reqs[len(reqs)-1]
	results := last.toolResults()
	if len(results) != len(searchTable) {
		t.Fatalf("the model got %d search results, want %d", len(results), len(searchTable))
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| query | tool | rank | ToolSearch results |\n|---|---|---|---|")
	for i, q := range searchTable {
		refs := results[i].references()
		rank := slices.Index(refs, "mcp__cline__"+q.tool) + 1
		short := strings.ReplaceAll(strings.Join(refs, ", "), "mcp__cline__", "")
		fmt.Fprintf(&table, "\n| %s | %s | %d | %s |", q.query, q.tool, rank, short)
		if rank == 0 {
			t.Errorf("ToolSearch %q does not find %s: %v", q.query, q.tool, refs)
		}
	}
	t.Logf("ToolSearch ranks (Claude Code %s):%s", claudeCodeLatest, table.String())

	for _, tool := range []string{"ask_cline", "apply_cline_edits", "ask_cline_workspace", "review_cline", "cline_job", "cline_sessions"} {
		i := slices.IndexFunc(last.Body.Tools, func(tl apiTool) bool { return tl.Name == "mcp__cline__"+tool })
		if i < 0 {
			t.Errorf("after the searches the model still has no definition of %s", tool)
			continue
		}
		if !last.Body.Tools[i].DeferLoading {
			t.Errorf("%s is defined without defer_loading: Claude Code did not defer it", tool)
		}
		if strings.Contains(string(reqs[0].Raw), `"name":"mcp__cline__`+tool+`"`) {
			t.Errorf("%s was defined before any search: tool search is not on", tool)
		}
		// the model is told every tool's name before it searches
		if !strings.Contains(string(reqs[0].Raw), "- "+tool+": ") {
			t.Errorf("the server's instructions the model reads do not describe %s", tool)
		}
	}
	wantToolSchemas(t, last)
}

// claudeSearchJob: the model finds ask_cline, starts it in the background, finds cline_job by
// "background job status" and polls it until the job is done, reading the answer; then finds
// and calls cline_sessions.
func claudeSearchJob(t *testing.T) {
	c := newClaudeWorldAt(t, claudeCodeLatest, worldOpts{})
	jobID := func(results []block) map[string]any {
		for _, r := range results {
			if id, ok := r.structured()["jobId"].(string); ok {
				return map[string]any{"jobId": id}
			}
		}
		return map[string]any{"jobId": "missing"}
	}
	done := func(res block) bool { st := res.structured()["state"]; return st != nil && st != "running" }
	r := c.run(runOpts{script: searchingModel([]step{
		{search: toolQueries["ask_cline"]},
		{call: "ask_cline", input: map[string]any{"prompt": "Work fake:slow?seconds=1&interval_ms=200", "cwd": c.work, "background": true}},
		{search: toolQueries["cline_job"]},
		{call: "cline_job", args: jobID, until: done},
		{search: toolQueries["cline_sessions"]},
		{call: "cline_sessions", input: map[string]any{}},
	})})
	r.wantClean(t)
	results := r.toolResults()
	if len(results) < 3 {
		t.Fatalf("the model got %d tool results, want the start, the job's answers and the sessions: %+v", len(results), results)
	}
	start, final, sessions := results[0].structured(), results[len(results)-2].structured(), results[len(results)-1]
	if start["jobId"] == nil || start["state"] != "running" {
		t.Errorf("the background start is %v, want a running job with its jobId", start)
	}
	if final["state"] != "succeeded" || !strings.Contains(fmt.Sprint(final["result"]), "tick") {
		t.Errorf("cline_job's last answer is %.400v, want the done job with its result", final)
	}
	if sessions.IsError || sessions.structured()["sessions"] == nil {
		t.Errorf("cline_sessions answered %.300q", sessions.text())
	}
	t.Logf("the model polled cline_job %d time(s)", len(results)-2)
}
