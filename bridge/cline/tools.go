package cline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// teamTools are the team_* tools of the 25-tool act-mode list (a_text_pong request0). They
// coordinate teammates, which are agents that can edit, so an analysis run disables all of them.
var teamTools = []string{
	"team_spawn_teammate", "team_shutdown_teammate", "team_status", "team_task", "team_run_task",
	"team_cancel_run", "team_list_runs", "team_await_runs", "team_send_message", "team_broadcast",
	"team_read_mailbox", "team_mission_log", "team_cleanup", "team_create_outcome",
	"team_attach_outcome_fragment", "team_review_outcome_fragment", "team_finalize_outcome",
	"team_list_outcomes",
}

// ReadOnlyDisabledTools are the tools an analysis run on the host disables through
// global-settings.json `disabledTools` while running with `--auto-approve true`
// (x_tools_disabled_readonly: a disabled tool is unavailable to the model, AI_NoSuchToolError).
// What stays: read_files, search_codebase, fetch_web_content, ask_question. `--auto-approve false`
// is no alternative: headless it denies every tool, reading included
// (x_read_files_autoapprove_false).
var ReadOnlyDisabledTools = append([]string{"editor", "run_commands", "spawn_agent", "submit_and_exit"}, teamTools...)

// DockerAnalysisAllowedTools are the mutating tools an analysis run in a container keeps: its
// workspace is mounted read-only, so commands cannot change the user's files and help the
// analysis (git log, grep, ...). Pass them as Outcome.Allowed so their successes do not warn.
var DockerAnalysisAllowedTools = []string{"run_commands"}

// DockerAnalysisDisabledTools is ReadOnlyDisabledTools minus DockerAnalysisAllowedTools.
var DockerAnalysisDisabledTools = slices.DeleteFunc(slices.Clone(ReadOnlyDisabledTools), func(s string) bool {
	return slices.Contains(DockerAnalysisAllowedTools, s)
})

// legacyMutatingTools are file-writing or command tools of other Cline versions. They are never
// offered by 3.0.65; IsMutatingTool knows them so a warning still fires if a future CLI renames
// its tools back.
var legacyMutatingTools = []string{
	"write_to_file", "replace_in_file", "apply_patch", "execute_command", "delete_file", "new_task",
}

// IsMutatingTool reports whether a tool can change files or spawn something that can: the
// tools in ReadOnlyDisabledTools plus the file tools of older Cline versions.
func IsMutatingTool(name string) bool {
	return slices.Contains(ReadOnlyDisabledTools, name) || slices.Contains(legacyMutatingTools, name)
}

// GlobalSettings returns a global-settings.json for a run with the given tools disabled: the
// user's own settings (userGlobal; nil, empty or invalid JSON counts as {}) with every key kept,
// and disabledTools set to the union of the user's list and disabled (user's order first, no
// duplicates). toolAutoApprove is left as the user had it: the bridge always passes
// `--auto-approve`, which wins over the file (FINDINGS §4). Point the CLI at the result with
// CLINE_GLOBAL_SETTINGS_PATH. The output is indented JSON with a trailing newline.
func GlobalSettings(userGlobal []byte, disabled []string) ([]byte, error) {
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
	for _, d := range disabled {
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
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("global settings: %w", err)
	}
	return append(out, '\n'), nil
}
