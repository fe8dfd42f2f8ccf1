package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// toolSpec is everything the server advertises for one tool.
type toolSpec struct {
	tool        run.Tool
	title       string
	description string
	readOnly    bool
	destructive bool
	idempotent  bool
	cwdRequired bool
	system      bool // accepts systemPrompt
}

var toolSpecs = []toolSpec{
	{
		tool:  run.AskCline,
		title: "Ask Cline",
		description: "Ask the locally installed, authenticated Cline CLI for an analysis or chat answer. " +
			"Cline may read the code in cwd but can never change it (mutating tools are disabled). " +
			"Returns Cline's final answer.",
		readOnly: true, idempotent: true, system: true,
	},
	{
		tool:  run.ApplyClineEdits,
		title: "Apply Cline edits",
		description: "Have Cline implement a development task directly in the git checkout at cwd. " +
			"Files may change; commits are forbidden (a commit is reported as kind commit_created with the evidence). " +
			"Returns Cline's answer plus the diff of exactly the run's changes and the changed files.",
		destructive: true, cwdRequired: true,
	},
	{
		tool:  run.AskClineWorkspace,
		title: "Ask Cline in a disposable worktree",
		description: "Analyse a git repository in a disposable detached worktree of its HEAD (uncommitted changes are not " +
			"included). The worktree is removed afterwards, or cleaned and reused when the server keeps a worktree pool. " +
			"Cline can read but not change files.",
		readOnly: true, idempotent: true, cwdRequired: true,
	},
}

func (s toolSpec) mcpTool() mcp.Tool {
	t := mcp.NewToolWithRawSchema(string(s.tool), s.description, s.inputSchema())
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

func (s toolSpec) inputSchema() json.RawMessage {
	props := []string{
		`"prompt":{"type":"string","minLength":1,"description":"The task or question for Cline."}`,
	}
	cwd := `"cwd":{"type":"string","minLength":1,"description":"Absolute path of the directory Cline works in`
	if s.cwdRequired {
		cwd += ` (must be inside a git work tree)."}`
	} else {
		cwd += ` (default: the server's working directory)."}`
	}
	props = append(props, cwd,
		`"thinking":{"type":"string","enum":["none","low","medium","high","xhigh"],"default":"none","description":"Reasoning effort passed to Cline as --thinking."}`,
		fmt.Sprintf(`"timeoutSeconds":{"type":"integer","minimum":1,"maximum":%d,"default":%d,"description":"Deadline for one attempt; larger values are rejected, not clamped."}`, MaxTimeoutSeconds, DefaultTimeoutSeconds),
	)
	if s.system {
		props = append(props, `"systemPrompt":{"type":"string","description":"Replaces Cline's system prompt (-s)."}`)
	}
	props = append(props,
		`"provider":{"type":"string","pattern":"^[A-Za-z0-9._:/@-]{1,120}$","description":"Provider id override (-P) for this call only; the user's saved settings never change."}`,
		`"model":{"type":"string","pattern":"^[A-Za-z0-9._:/@-]{1,120}$","description":"Model id override (-m) for this call only; the user's saved settings never change."}`,
		`"isolation":{"type":"string","enum":["host","docker"],"description":"Ask for stronger isolation than the server's floor: docker runs Cline in a hardened container."}`,
	)
	required := `["prompt"]`
	if s.cwdRequired {
		required = `["prompt","cwd"]`
	}
	return json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":` + required + `,"additionalProperties":false}`)
}

// outputSchema admits both the success and the failure shape: the TypeScript SDK validates
// structuredContent against it even when isError is true.
func outputSchema(tool run.Tool) json.RawMessage {
	props := []string{
		`"ok":{"type":"boolean"}`,
		`"text":{"type":"string"}`,
		`"warnings":{"type":"array","items":{"type":"string"}}`,
		`"attempts":{"type":"integer"}`,
		`"exitCode":{"type":["integer","null"]}`,
		`"signal":{"type":["string","null"]}`,
		`"durationMs":{"type":"integer"}`,
		`"model":{"type":"string"}`,
		`"usage":{"type":"object"}`,
		`"isolation":{"type":"string","enum":["host","docker"]}`,
		`"attemptIsolation":{"type":"array","items":{"type":"string"}}`,
		`"kind":{"type":"string","enum":["non_zero_exit","transient_provider_error","timeout","cline_updating","cancelled","launch_failed","malformed_json","missing_final_result","workspace_not_git","workspace_setup_failed","workspace_cleanup_failed","commit_created","edits_inspection_failed"]}`,
		`"message":{"type":"string"}`,
		`"retryable":{"type":"boolean"}`,
		`"elapsedSeconds":{"type":"number"}`,
		`"stderrTail":{"type":"string"}`,
		`"stdoutTail":{"type":"string"}`,
	}
	switch tool {
	case run.ApplyClineEdits:
		props = append(props,
			`"diff":{"type":"string"}`,
			`"diffTruncated":{"type":"boolean"}`,
			`"changedFiles":{"type":"array","items":{"type":"object"}}`,
			`"headBefore":{"type":"string"}`,
			`"headAfter":{"type":"string"}`,
			`"git":{"type":"object"}`,
		)
	case run.AskClineWorkspace:
		props = append(props, `"worktree":{"type":"object","properties":{"commit":{"type":"string"},"reused":{"type":"boolean"},"removed":{"type":"boolean"},"pooled":{"type":"boolean"},"path":{"type":"string"},"touched":{"type":"array","items":{"type":"object"}}}}`)
	}
	return json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":["ok","warnings","attempts"]}`)
}
