package mcpserver

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// toolSpec is everything the server advertises for one tool besides its schemas, which schema.go
// generates from the arguments and output structs.
type toolSpec struct {
	tool        run.Tool
	title       string
	description string
	readOnly    bool
	destructive bool
	idempotent  bool
	cwdRequired bool
}

var toolSpecs = []toolSpec{
	{
		tool:  run.AskCline,
		title: "Ask Cline",
		description: "Ask the locally installed, authenticated Cline CLI for an analysis or chat answer. " +
			"Cline may read the code in cwd but can never change it (mutating tools are disabled). " +
			"Returns Cline's final answer.",
		readOnly: true, idempotent: true,
	},
	{
		tool:  run.ApplyClineEdits,
		title: "Apply Cline edits",
		description: "Have Cline implement a development task directly in the git checkout at cwd: files change, " +
			"commits are forbidden (reported as kind commit_created, with the evidence). " +
			"Returns Cline's answer, the diff of exactly the run's changes and the changed files.",
		destructive: true, cwdRequired: true,
	},
	{
		tool:  run.AskClineWorkspace,
		title: "Ask Cline in a disposable worktree",
		description: "Analyse a git repository in a disposable detached worktree of its HEAD (without uncommitted changes), " +
			"removed afterwards or cleaned and reused when the server keeps a worktree pool. " +
			"Cline can read but not change files.",
		readOnly: true, idempotent: true, cwdRequired: true,
	},
	{
		tool:  run.ReviewCline,
		title: "Review with Cline",
		description: "Have Cline review a change in the git checkout at cwd: the uncommitted work (default), a branch against " +
			"its merge base with a ref, or one commit. Cline reads the diff and the code in a disposable worktree of " +
			"exactly that state; the user's files, index and stash stay untouched. Returns the review and its findings " +
			"(severity, file, line, title, detail, suggestion), each checked against the diff.",
		readOnly: true, idempotent: true, cwdRequired: true,
	},
}

func (s toolSpec) mcpTool() mcp.Tool {
	t := mcp.NewToolWithRawSchema(string(s.tool), s.description, inputSchema(s.tool))
	t.Annotations = mcp.ToolAnnotation{
		Title:           s.title,
		ReadOnlyHint:    mcp.ToBoolPtr(s.readOnly),
		DestructiveHint: mcp.ToBoolPtr(s.destructive),
		IdempotentHint:  mcp.ToBoolPtr(s.idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(true), // Cline talks to a model provider on the network
	}
	t.RawOutputSchema = outputSchema(s.tool)
	return t
}
