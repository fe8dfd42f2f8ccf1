package cline

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestPromptArg(t *testing.T) {
	tests := []struct{ in, want string }{
		{"PONG", "PONG "},                      // single word: rejected by the CLI without whitespace
		{"PONG ", "PONG "},                     // already has whitespace
		{"PONG\n", "PONG\n"},                   // a newline counts
		{"Reply with PONG", "Reply with PONG"}, // unchanged
		{"-PONG hi", " -PONG hi"},              // would be parsed as an option
		{"-PONG", " -PONG"},                    // both rules: the prepended space is the whitespace
		{"--help", " --help"},
		{" -PONG", " -PONG"},    // leading space already accepted
		{"a\tb", "a\tb"},        // tab is whitespace
		{"", " "},               // empty (the caller rejects it before) still yields one element
		{"version", "version "}, // a command name becomes a prompt
		{"héllo", "héllo "},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := PromptArg(tc.in); got != tc.want {
				t.Errorf("PromptArg(%q): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want []string
	}{
		{"minimal analysis", Request{Prompt: "Reply with PONG", Cwd: "/repo"},
			[]string{"--json", "--auto-approve", "false", "--thinking", "none", "-c", "/repo", "Reply with PONG"}},
		{"auto-approve and thinking", Request{Prompt: "fix it", Cwd: "/r", AutoApprove: true, Thinking: "high"},
			[]string{"--json", "--auto-approve", "true", "--thinking", "high", "-c", "/r", "fix it"}},
		{"explicit none", Request{Prompt: "a b", Thinking: "none"},
			[]string{"--json", "--auto-approve", "false", "--thinking", "none", "a b"}},
		{"overrides", Request{Prompt: "PONG", Provider: "openai-native", Model: "gpt-fake", SystemPrompt: "You are terse.", Cwd: "/r"},
			[]string{"--json", "--auto-approve", "false", "--thinking", "none", "-P", "openai-native", "-m", "gpt-fake", "-s", "You are terse.", "-c", "/r", "PONG "}},
		{"docker data dir", Request{Prompt: "-x", Cwd: "/work", DataDir: "/cline-data", Thinking: "xhigh"},
			[]string{"--json", "--auto-approve", "false", "--thinking", "xhigh", "-c", "/work", "--data-dir", "/cline-data", " -x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Args(tc.req)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			for _, forbidden := range []string{"-t", "--timeout", "--yolo", "-y", "--id", "-k", "--key"} {
				if slices.Contains(got[:len(got)-1], forbidden) {
					t.Errorf("got %q containing %s", got, forbidden)
				}
			}
		})
	}
}

func TestArgsSystemPromptIsOneElement(t *testing.T) {
	sys := "line one\n-- line two with \"quotes\" and $HOME"
	got := Args(Request{Prompt: "go now", SystemPrompt: sys})
	i := slices.Index(got, "-s")
	if i < 0 || got[i+1] != sys {
		t.Errorf("got %q, want -s followed by the system prompt unchanged", got)
	}
	if got[len(got)-1] != "go now" {
		t.Errorf("got last element %q, want the prompt", got[len(got)-1])
	}
}

func TestValidThinking(t *testing.T) {
	for _, s := range []string{"", "none", "low", "medium", "high", "xhigh"} {
		if !ValidThinking(s) {
			t.Errorf("ValidThinking(%q): got false, want true", s)
		}
	}
	for _, s := range []string{"extreme", "NONE", " high"} {
		if ValidThinking(s) {
			t.Errorf("ValidThinking(%q): got true, want false", s)
		}
	}
}

func TestEnv(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/home/u", "CLINE_NO_AUTO_UPDATE=0", "CLINE_SESSION_BACKEND_MODE=hub", "PATH=/usr/bin", "EMPTY="}
	got := Env(base, map[string]string{"CLINE_GLOBAL_SETTINGS_PATH": "/tmp/gs.json", "HOME": "/tmp/h", "A": "1"})
	want := []string{
		"PATH=/usr/bin", "HOME=/tmp/h", "CLINE_NO_AUTO_UPDATE=1", "CLINE_SESSION_BACKEND_MODE=local", "EMPTY=",
		"A=1", "CLINE_GLOBAL_SETTINGS_PATH=/tmp/gs.json",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	seen := map[string]bool{}
	for _, kv := range got {
		k, _, _ := strings.Cut(kv, "=")
		if seen[k] {
			t.Errorf("got duplicate key %s in %q", k, got)
		}
		seen[k] = true
	}
	if slices.Contains(base, "CLINE_NO_AUTO_UPDATE=1") {
		t.Error("Env modified its base argument")
	}
}

func TestEnvExtraCanOverrideDefaults(t *testing.T) {
	got := Env(nil, map[string]string{"CLINE_SESSION_BACKEND_MODE": "hub"})
	want := []string{"CLINE_NO_AUTO_UPDATE=1", "CLINE_SESSION_BACKEND_MODE=hub"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestEnvKeepsWindowsDriveEntries(t *testing.T) {
	got := Env([]string{"=C:=C:\\x", "=D:=D:\\y"}, nil)
	if len(got) != 4 || got[0] != "=C:=C:\\x" || got[1] != "=D:=D:\\y" {
		t.Errorf("got %q, want both drive entries kept", got)
	}
}

func TestGlobalSettings(t *testing.T) {
	tests := []struct {
		name     string
		user     string
		disabled []string
		want     map[string]any
	}{
		{"nil", "", []string{"editor", "run_commands"},
			map[string]any{"disabledTools": []any{"editor", "run_commands"}}},
		{"invalid JSON starts from empty", "{not json", []string{"editor"},
			map[string]any{"disabledTools": []any{"editor"}}},
		{"JSON array is not settings", "[1,2]", []string{"editor"},
			map[string]any{"disabledTools": []any{"editor"}}},
		{"keeps user keys and merges lists", `{"telemetryOptOut":true,"toolAutoApprove":false,"nested":{"a":[1]},"disabledTools":["fetch_web_content","editor"]}`,
			[]string{"editor", "run_commands"},
			map[string]any{"telemetryOptOut": true, "toolAutoApprove": false, "nested": map[string]any{"a": []any{1.0}},
				"disabledTools": []any{"fetch_web_content", "editor", "run_commands"}}},
		{"non-list disabledTools replaced", `{"disabledTools":"editor"}`, []string{"editor"},
			map[string]any{"disabledTools": []any{"editor"}}},
		{"nothing to disable", `{"x":1}`, nil,
			map[string]any{"x": 1.0, "disabledTools": []any{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := GlobalSettings([]byte(tc.user), tc.disabled)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(out), "}\n") {
				t.Errorf("got %q, want a trailing newline", out)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("got invalid JSON %q: %v", out, err)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tc.want)
			if string(gj) != string(wj) {
				t.Errorf("got %s, want %s", gj, wj)
			}
		})
	}
}

func TestToolPolicy(t *testing.T) {
	// The 25 act-mode tools offered by cline 3.0.65 (a_text_pong request0.full.json).
	offered := []string{"read_files", "search_codebase", "run_commands", "fetch_web_content", "editor", "ask_question",
		"spawn_agent", "team_spawn_teammate", "team_shutdown_teammate", "team_status", "team_task", "team_run_task",
		"team_cancel_run", "team_list_runs", "team_await_runs", "team_send_message", "team_broadcast",
		"team_read_mailbox", "team_mission_log", "team_cleanup", "team_create_outcome",
		"team_attach_outcome_fragment", "team_review_outcome_fragment", "team_finalize_outcome", "team_list_outcomes"}
	var kept []string
	for _, tool := range offered {
		if !slices.Contains(ReadOnlyDisabledTools, tool) {
			kept = append(kept, tool)
		}
	}
	if want := []string{"read_files", "search_codebase", "fetch_web_content", "ask_question"}; !slices.Equal(kept, want) {
		t.Errorf("got read-only tools %q, want %q", kept, want)
	}
	for _, tool := range ReadOnlyDisabledTools {
		if !IsMutatingTool(tool) {
			t.Errorf("IsMutatingTool(%q): got false, want true", tool)
		}
	}
	for _, tool := range []string{"read_files", "search_codebase", "fetch_web_content", "ask_question", ""} {
		if IsMutatingTool(tool) {
			t.Errorf("IsMutatingTool(%q): got true, want false", tool)
		}
	}
	if !slices.Contains(ReadOnlyDisabledTools, "submit_and_exit") {
		t.Error("got submit_and_exit enabled, want it disabled")
	}
	if slices.Contains(DockerAnalysisDisabledTools, "run_commands") || len(DockerAnalysisDisabledTools) != len(ReadOnlyDisabledTools)-1 {
		t.Errorf("got docker list %q, want the read-only list minus run_commands", DockerAnalysisDisabledTools)
	}
}
