package cline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// PolicyCLIVersion is the Cline CLI version the analysis tool policy was written for: KnownTools
// is every tool that version's own code can offer the model, read from its bundled source and
// checked against the `tools` array of its chat requests (the contract suite's
// TestAnalysisToolsOffered). A different version may offer tools this list does not know; the
// runner and doctor say so loudly.
const PolicyCLIVersion = "3.0.65"

// teamTools are the team_* tools of the 25-tool act-mode list (a_text_pong request0). They
// coordinate teammates, which are agents that can edit.
var teamTools = []string{
	"team_spawn_teammate", "team_shutdown_teammate", "team_status", "team_task", "team_run_task",
	"team_cancel_run", "team_list_runs", "team_await_runs", "team_send_message", "team_broadcast",
	"team_read_mailbox", "team_mission_log", "team_cleanup", "team_create_outcome",
	"team_attach_outcome_fragment", "team_review_outcome_fragment", "team_finalize_outcome",
	"team_list_outcomes",
}

// KnownTools is every tool name Cline 3.0.65 can offer from its own code: its built-in catalog
// (editor is apply_patch for some models; skills appears when skills are configured; tasks is
// not offered by the CLI; submit_and_exit only in --yolo), spawn_agent and the team tools, and
// web_search, the provider-native search of some providers (cline, …). Tools of MCP servers and
// plugins are not here: their names are not known in advance, so analysis runs switch their
// sources off instead (see AnalysisEnv in bridge/run).
var KnownTools = append([]string{
	"read_files", "search_codebase", "run_commands", "fetch_web_content", "editor", "apply_patch",
	"ask_question", "skills", "tasks", "submit_and_exit", "spawn_agent", "web_search",
}, teamTools...)

// legacyTools are tool names of other Cline versions and agent runtimes bundled with the CLI.
// 3.0.65 never offers them to its own agent; they are disabled too, and IsMutatingTool knows the
// writing ones, so a future CLI that brings one back is caught.
var legacyTools = []string{
	"write_to_file", "replace_in_file", "apply_diff", "insert_content", "apply_patch", "execute_command",
	"delete_file", "new_task", "bash", "code_execution", "memory", "browser_action", "use_mcp_tool",
	"access_mcp_resource", "web_fetch", "attempt_completion", "ask_followup_question",
}

// mutatingTools can change files or start something that can.
var mutatingTools = append([]string{
	"editor", "apply_patch", "run_commands", "spawn_agent", "submit_and_exit", "tasks", "write_to_file",
	"replace_in_file", "apply_diff", "insert_content", "execute_command", "delete_file", "new_task",
	"bash", "code_execution", "memory",
}, teamTools...)

// readTools read the workspace and nothing else: the allow-list of an analysis run on the host.
var readTools = []string{"read_files", "search_codebase"}

// AnalysisTools is the allow-list of an analysis run (ask_cline, ask_cline_workspace, review_cline): the tools
// that read the workspace, and in a container also run_commands (the workspace is mounted
// read-only or is a disposable worktree, and the network is the egress policy's). Every other
// tool is off: the known ones through DisabledTools, the rest by switching their sources off.
func AnalysisTools(docker bool) []string {
	if docker {
		return append(slices.Clone(readTools), "run_commands")
	}
	return slices.Clone(readTools)
}

// DisabledTools is KnownTools and the legacy names minus allowed, sorted: what an analysis run
// puts into global-settings.json disabledTools. The CLI has only this deny-list (no wildcard, no
// allow-list setting: the one-shot run builds its tool policies from --auto-approve alone), so
// the allow-list is built on it, per pinned version.
func DisabledTools(allowed []string) []string {
	var out []string
	for _, t := range append(slices.Clone(KnownTools), legacyTools...) {
		if !slices.Contains(allowed, t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// IsMutatingTool reports whether a tool can change files or spawn something that can.
func IsMutatingTool(name string) bool { return slices.Contains(mutatingTools, name) }

// EmptyMCPSettings is a cline_mcp_settings.json without servers. An analysis run points
// CLINE_MCP_SETTINGS_PATH at it, so none of the user's MCP servers is started or offered
// (verified on 3.0.65: the server's process never starts, its tools are not in the request).
const EmptyMCPSettings = "{\n  \"mcpServers\": {}\n}\n"

// GlobalSettings returns a global-settings.json for an analysis run with the allow-list allowed:
// the user's own settings (userGlobal; nil, empty or invalid JSON counts as {}) with every key
// kept, disabledTools set to the union of the user's list and DisabledTools(allowed) (user's
// order first, no duplicates; a tool the user disabled stays disabled, allowed or not), and tools.web_search.enabled false unless allowed. web_search is
// the CLI's one opt-out model tool: `disabledTools` does not reach it (verified on 3.0.65 with the
// cline provider, which offers it by default), only its `tools` entry does. toolAutoApprove is
// left as the user had it: the bridge always passes `--auto-approve`, which wins over the file
// (docs/cline-cli.md "Tools and approval"). Point the CLI at the result with CLINE_GLOBAL_SETTINGS_PATH. The output is
// indented JSON with a trailing newline.
func GlobalSettings(userGlobal []byte, allowed []string) ([]byte, error) {
	settings := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(userGlobal)) > 0 {
		if err := json.Unmarshal(userGlobal, &settings); err != nil || settings == nil {
			settings = map[string]json.RawMessage{}
		}
	}
	var tools []string
	if raw, ok := settings["disabledTools"]; ok {
		var users []any
		if json.Unmarshal(raw, &users) == nil {
			for _, u := range users {
				if s, ok := u.(string); ok && !slices.Contains(tools, s) {
					tools = append(tools, s)
				}
			}
		}
	}
	for _, d := range DisabledTools(allowed) {
		if !slices.Contains(tools, d) {
			tools = append(tools, d)
		}
	}
	if tools == nil {
		tools = []string{}
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		return nil, fmt.Errorf("global settings disabledTools: %w", err)
	}
	settings["disabledTools"] = raw
	model := map[string]json.RawMessage{}
	if raw, ok := settings["tools"]; ok {
		if json.Unmarshal(raw, &model) != nil || model == nil {
			model = map[string]json.RawMessage{}
		}
	}
	model["web_search"] = json.RawMessage(fmt.Sprintf(`{"enabled":%t}`, slices.Contains(allowed, "web_search")))
	if settings["tools"], err = json.Marshal(model); err != nil {
		return nil, fmt.Errorf("global settings tools: %w", err)
	}
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("global settings: %w", err)
	}
	return append(out, '\n'), nil
}
