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
	host := AnalysisTools(false)
	off := func(user ...string) []any {
		var out []any
		for _, u := range user {
			out = append(out, u)
		}
		for _, d := range DisabledTools(host) {
			if !slices.Contains(user, d) {
				out = append(out, d)
			}
		}
		return out
	}
	noSearch := map[string]any{"web_search": map[string]any{"enabled": false}}
	tests := []struct {
		name    string
		user    string
		allowed []string
		want    map[string]any
	}{
		{"nil", "", host, map[string]any{"disabledTools": off(), "tools": noSearch}},
		{"invalid JSON starts from empty", "{not json", host, map[string]any{"disabledTools": off(), "tools": noSearch}},
		{"JSON array is not settings", "[1,2]", host, map[string]any{"disabledTools": off(), "tools": noSearch}},
		{"keeps user keys and merges lists, user's disabled read tool stays off",
			`{"telemetryOptOut":true,"toolAutoApprove":false,"nested":{"a":[1]},"disabledTools":["read_files","editor"],"tools":{"web_search":{"enabled":true},"future":{"enabled":true}}}`,
			host,
			map[string]any{"telemetryOptOut": true, "toolAutoApprove": false, "nested": map[string]any{"a": []any{1.0}},
				"disabledTools": off("read_files", "editor"),
				"tools":         map[string]any{"web_search": map[string]any{"enabled": false}, "future": map[string]any{"enabled": true}}}},
		{"non-list disabledTools and tools replaced", `{"disabledTools":"editor","tools":3}`, host,
			map[string]any{"disabledTools": off(), "tools": noSearch}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := GlobalSettings([]byte(tc.user), tc.allowed)
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
				t.Errorf("got %s\nwant %s", gj, wj)
			}
		})
	}
}

func TestToolPolicy(t *testing.T) {
	// The 25 act-mode tools offered by cline 3.0.65 (a_text_pong request0.full.json), plus
	// web_search, which the cline provider offers by default.
	offered := []string{"read_files", "search_codebase", "run_commands", "fetch_web_content", "editor", "ask_question",
		"spawn_agent", "team_spawn_teammate", "team_shutdown_teammate", "team_status", "team_task", "team_run_task",
		"team_cancel_run", "team_list_runs", "team_await_runs", "team_send_message", "team_broadcast",
		"team_read_mailbox", "team_mission_log", "team_cleanup", "team_create_outcome",
		"team_attach_outcome_fragment", "team_review_outcome_fragment", "team_finalize_outcome", "team_list_outcomes",
		"web_search"}
	for _, tc := range []struct {
		docker bool
		want   []string
	}{
		{false, []string{"read_files", "search_codebase"}},
		{true, []string{"read_files", "search_codebase", "run_commands"}},
	} {
		allowed := AnalysisTools(tc.docker)
		if !slices.Equal(allowed, tc.want) {
			t.Errorf("docker %v: got allow-list %q, want %q", tc.docker, allowed, tc.want)
		}
		disabled := DisabledTools(allowed)
		var kept []string
		for _, tool := range offered {
			if !slices.Contains(disabled, tool) {
				kept = append(kept, tool)
			}
		}
		if !slices.Equal(kept, tc.want) {
			t.Errorf("docker %v: got tools left on %q, want %q", tc.docker, kept, tc.want)
		}
		for _, tool := range KnownTools {
			if slices.Contains(disabled, tool) == slices.Contains(allowed, tool) {
				t.Errorf("docker %v: %s is both allowed and disabled, or neither", tc.docker, tool)
			}
		}
	}
	for _, tool := range []string{"editor", "apply_patch", "run_commands", "spawn_agent", "submit_and_exit", "team_task", "write_to_file"} {
		if !IsMutatingTool(tool) {
			t.Errorf("IsMutatingTool(%q): got false, want true", tool)
		}
	}
	for _, tool := range []string{"read_files", "search_codebase", "fetch_web_content", "ask_question", "web_search", ""} {
		if IsMutatingTool(tool) {
			t.Errorf("IsMutatingTool(%q): got true, want false", tool)
		}
	}
}
