package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// ToolCall is what a permission request says about the call it asks for. Everything in it comes
// from the agent (in Docker: from a process that may be hostile): a Policy must treat it as data.
type ToolCall struct {
	SessionID string
	ID        string
	// Kind is the ACP tool kind: Cline maps editor→edit, read_files→read, run_commands→execute
	// and apply_patch→other (docs/acp.md §5), so a policy matches Tool as well.
	Kind string
	// Tool is the tool name, taken from the title ("editor: {...}"); "" when the title has no
	// recognisable name.
	Tool  string
	Title string // capped at 256 bytes
	// Input is rawInput (nil when absent or larger than maxInput).
	Input json.RawMessage
}

// Decision is a policy's answer: allow, reject (Reason explains it; it is recorded in the Turn),
// or Ask: the policy does not decide and the call is for a person (Resolve puts it to one; a
// policy that asks and is not resolved rejects, since Allow is false).
type Decision struct {
	Allow  bool
	Ask    bool
	Reason string
}

// Policy decides one permission request. ctx ends when the turn is cancelled or the connection
// closes; a policy that waits (for a person, say) must return soon after, and its answer is then
// replaced by "cancelled". A nil Policy rejects every call.
type Policy func(ctx context.Context, call ToolCall) Decision

// maxInput bounds the rawInput a policy sees.
const maxInput = 256 << 10

var titleTool = regexp.MustCompile(`^([a-z][a-z0-9_]{0,63}):`)

// toolName extracts the tool name from a Cline title like `editor: {"path":...`.
func toolName(title string) string {
	if m := titleTool.FindStringSubmatch(title); m != nil {
		return m[1]
	}
	return ""
}

// readTools are the tools a read-only policy allows, with the kinds Cline gives them.
var readTools = map[string][]string{
	"read_files":      {"read"},
	"search_codebase": {"read", "search"},
}

// ReadOnly is the analysis policy: read_files and search_codebase are allowed, and with
// commands also run_commands (in a container, where the workspace is read-only or disposable);
// every other call is rejected. Both the kind and the tool name must match, so neither a
// misleading title nor an unmapped kind (apply_patch is "other") lets an edit through.
func ReadOnly(commands bool) Policy {
	return func(_ context.Context, c ToolCall) Decision {
		if kinds, ok := readTools[c.Tool]; ok && slices.Contains(kinds, c.Kind) {
			return Decision{Allow: true}
		}
		if commands && c.Tool == "run_commands" && c.Kind == "execute" {
			return Decision{Allow: true}
		}
		return Decision{Reason: fmt.Sprintf("denied by policy: read-only analysis: %s (kind %s) is not allowed; do not retry", orUnknown(c.Tool), orUnknown(c.Kind))}
	}
}

// Edits is the apply_cline_edits policy: every call is allowed except a command that may move a
// git ref or write .git (GitCommand: git's subcommands are an allow-list of those that cannot —
// status, diff, log, show, grep, blame, rev-parse, cat-file, …, checkout/restore of working-tree
// files — and anything the check cannot read counts as denied). Such a call is rejected before it
// runs, with a reason that tells the agent not to retry it. It is a first line, not the
// guarantee: a script file can still commit, which the run's after-the-fact HEAD check catches.
func Edits() Policy {
	return func(_ context.Context, c ToolCall) Decision {
		if c.Kind != "execute" && c.Tool != "run_commands" {
			return Decision{Allow: true}
		}
		cmds, ok := commands(c.Input)
		if !ok {
			return Decision{Reason: "denied by policy: the command of this call cannot be read, so it cannot be checked for git ref moves; do not retry"}
		}
		for _, cmd := range cmds {
			if why := GitCommand(cmd); why != "" {
				return Decision{Reason: "denied by policy: " + why + "; do not retry"}
			}
		}
		return Decision{Allow: true}
	}
}

// commands extracts the command lines of an execute call's rawInput: {"commands":[...]} (Cline's
// run_commands) or {"command":"..."}; elements may be strings or {"command":"..."}.
func commands(raw json.RawMessage) ([]string, bool) {
	var in struct {
		Commands []json.RawMessage `json:"commands"`
		Command  *string           `json:"command"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &in) != nil {
		return nil, false
	}
	var out []string
	if in.Command != nil {
		out = append(out, *in.Command)
	}
	for _, r := range in.Commands {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, s)
			continue
		}
		var o struct {
			Command *string `json:"command"`
		}
		if json.Unmarshal(r, &o) != nil || o.Command == nil {
			return nil, false
		}
		out = append(out, *o.Command)
	}
	return out, len(out) > 0
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
