package mcpserver

import (
	"maps"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// Claude Code 2.1.328 and later defer MCP tools behind their ToolSearch tool: the model sees only
// the tools' names (and the server's instructions) until it searches. A keyword search scores
// each deferred tool on the words of the server and tool name, on whole words of its description,
// and on whole words of its _meta "anthropic/searchHint" (worth twice a description word), and
// returns the best five. searchHints are the words a user asks with for each tool, so that each
// tool ranks near the top for them (e2e TestClaudeCodeLatest tests a table of such queries
// through the real ToolSearch). Every hint of a tool that runs Cline names Cline, so that a
// search for "cline" puts those four before the two that follow their jobs and sessions.
const searchHintKey = "anthropic/searchHint"

var searchHints = map[run.Tool]string{
	run.AskCline:          "ask Cline a question about code: explain, analyse, answer (read-only)",
	run.ApplyClineEdits:   "have Cline edit files: implement a feature, fix a bug, refactor code, make changes; returns the diff",
	run.AskClineWorkspace: "have Cline analyse or analyze a git repository at HEAD in a disposable worktree (read-only)",
	run.ReviewCline: "ask Cline to review code changes: uncommitted work, a diff, a branch, a pull request or a commit; " +
		"returns findings",
	jobTool:      "background job status, progress, result or cancel of a background run; read a long result in pages",
	sessionsTool: "list sessions to continue a conversation: a follow-up question that sees earlier turns (sessionId)",
}

// withSearchHint adds the tool's search hint to its _meta, keeping what _meta had.
func withSearchHint(t mcp.Tool) mcp.Tool {
	h, ok := searchHints[run.Tool(t.Name)]
	if !ok {
		return t
	}
	meta := &mcp.Meta{AdditionalFields: map[string]any{}}
	if t.Meta != nil {
		meta.ProgressToken = t.Meta.ProgressToken
		maps.Copy(meta.AdditionalFields, t.Meta.AdditionalFields)
	}
	meta.AdditionalFields[searchHintKey] = h
	t.Meta = meta
	return t
}

// instructions are the server's instructions (initialize and server/discover): one line per tool
// the server offers, in the words of its search hint, so that a model whose client defers the
// tools knows every tool's name and what to search for.
func instructions(jobs, sessions bool) string {
	lines := []string{
		"Delegate coding work to the local Cline CLI (every tool takes a prompt; cwd is the git checkout):",
		"- ask_cline: ask a question about code; read-only analysis and explanations.",
		"- apply_cline_edits: edit files in the checkout at cwd (implement, fix, refactor); commits are forbidden; returns the diff.",
		"- ask_cline_workspace: analyse a repository's HEAD, read-only, in a disposable git worktree.",
		"- review_cline: review changes (uncommitted work, a branch or a commit) and return findings.",
	}
	if jobs {
		lines = append(lines, `- cline_job: status, progress, result or cancel of a background job (a run tool called with "background": true), and the pages of a long result.`)
	}
	if sessions {
		lines = append(lines, "- cline_sessions: list sessions to continue a conversation (pass its sessionId to the same tool).")
	}
	return strings.Join(lines, "\n")
}
