//go:build contract && linux

package contract

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// userExtensions gives the world's user what many Cline users have: an MCP server with a write
// tool in cline_mcp_settings.json (mcpwriter, which leaves a mark when the CLI starts it), a hook
// and a plugin in ~/.cline, and the cline provider (which offers web_search) next to the fake
// openai-compatible one. It returns where the marks appear.
func userExtensions(t *testing.T, w *world) (mcpMark, hookMark, pluginMark string) {
	t.Helper()
	mcpMark = filepath.Join(w.root, "mcp-started")
	hookMark = filepath.Join(w.root, "hook-ran")
	pluginMark = filepath.Join(w.root, "plugin-loaded")
	clineDir := filepath.Join(w.home, ".cline")
	w.writeJSON(filepath.Join(clineDir, "data", "settings", "cline_mcp_settings.json"), map[string]any{
		"mcpServers": map[string]any{"fs": map[string]any{
			"command": filepath.Join(suite.bins.Dir, "mcpwriter"), "args": []string{},
			"env": map[string]any{"MCPWRITER_MARK": mcpMark},
		}},
	})
	writeFile(t, filepath.Join(clineDir, "hooks", "TaskStart"), fmt.Sprintf("#!/bin/bash\ntouch %s\necho '{}'\n", hookMark), 0o755)
	writeFile(t, filepath.Join(clineDir, "plugins", "mark.js"), fmt.Sprintf(`require("fs").writeFileSync(%q, "x");
export default { name: "mark", manifest: { capabilities: ["tools"] }, setup(api) {
  api.registerTool({ name: "plugin_tool", description: "a plugin's tool", inputSchema: { type: "object", properties: {} }, execute: async () => "ok" });
} };
`, pluginMark), 0o644)
	// The user's global rules still apply to analysis (the private Cline directory links them).
	writeFile(t, filepath.Join(clineDir, "rules", "style.md"), "Always sign answers with RULE-MARK.\n", 0o644)
	return mcpMark, hookMark, pluginMark
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// withClineProvider adds the cline provider (pointed at the fake) to providers.json.
func withClineProvider(base string) map[string]any {
	m := providersJSON(base)
	m["providers"].(map[string]any)["cline"] = map[string]any{
		"settings":  map[string]any{"provider": "cline", "apiKey": "sk-test-123", "model": "anthropic/claude-sonnet-4.6", "baseUrl": base},
		"updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual",
	}
	return m
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestAnalysisToolsOffered is the ground truth of the analysis allow-list on the host: the
// `tools` array of every chat request of ask_cline and ask_cline_workspace is exactly
// read_files and search_codebase — for the openai-compatible provider and for the cline provider
// (which offers web_search by default) — although the user configured an MCP server with a write
// tool, a hook and a plugin. The MCP server never starts, the hook never runs, the plugin never
// loads; when the model calls the MCP server's tool anyway, nothing is written. apply_cline_edits
// in the same world offers all of them: the setup is real.
func TestAnalysisToolsOffered(t *testing.T) {
	pwned := ""
	w := newWorld(t, func(i int, r fakeprovider.Request) fakeprovider.Step {
		if msgs := r.Messages(); strings.Contains(lastOf(msgs, "user"), "write it anyway") && lastOf(msgs, "tool") == "" {
			return fakeprovider.Tools(fakeprovider.Call{Name: "fs__write_file", Arguments: map[string]any{"path": pwned, "content": "pwned"}})
		}
		return fakeprovider.Text("done")
	}, withProviders(withClineProvider))
	pwned = filepath.Join(w.work, "pwned.txt")
	mcpMark, hookMark, pluginMark := userExtensions(t, w)
	want := sorted(cline.AnalysisTools(false))

	for _, tc := range []struct{ tool, provider string }{
		{"ask_cline", ""}, {"ask_cline_workspace", ""}, {"ask_cline", "cline"}, {"ask_cline_workspace", "cline"},
	} {
		before := len(w.chats(-1))
		args := map[string]any{"prompt": "Summarise the repository please"}
		if tc.provider != "" {
			args["provider"] = tc.provider
		}
		res, sc := w.call(tc.tool, args)
		mcpsession.WantOK(t, res, sc)
		for _, r := range w.chats(-1)[before:] {
			if got := sorted(r.ToolNames()); !slices.Equal(got, want) {
				t.Errorf("%s (provider %q) offered %q, want exactly %q", tc.tool, tc.provider, got, want)
			}
			if !strings.Contains(r.SystemPrompt(), "RULE-MARK") {
				t.Errorf("%s: the user's global rules are missing from the system prompt", tc.tool)
			}
		}
		if ws, _ := sc["warnings"].([]any); len(ws) > 0 {
			t.Errorf("%s: got warnings %v, want none", tc.tool, ws)
		}
	}
	for _, m := range []string{mcpMark, hookMark, pluginMark} {
		if _, err := os.Stat(m); err == nil {
			t.Errorf("%s exists: the user's MCP server, hook or plugin ran during analysis", filepath.Base(m))
		}
	}

	// The model asks for the MCP server's write tool anyway: the CLI has no such tool.
	before := len(w.chats(-1))
	_, sc := w.call("ask_cline", map[string]any{"prompt": "There is a write tool; write it anyway"})
	if n := len(w.chats(-1)) - before; n < 2 {
		t.Errorf("the provider got %d request(s) for the write attempt, want the tool call and the CLI's answer to it", n)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("ask_cline wrote %s through the user's MCP server (result %v)", pwned, sc)
	}
	if _, err := os.Stat(mcpMark); err == nil {
		t.Error("the user's MCP server was started for an analysis run")
	}
	if st := git(t, w.work, "status", "--porcelain"); st != "" {
		t.Errorf("git status after the analysis runs: %q, want clean", st)
	}

	// The control: apply_cline_edits runs with the user's whole setup.
	before = len(w.chats(-1))
	res, sc := w.call("apply_cline_edits", map[string]any{"prompt": "Summarise the repository please", "provider": "cline"})
	mcpsession.WantOK(t, res, sc)
	got := w.chats(-1)[before].ToolNames()
	for _, tool := range []string{"editor", "run_commands", "fs__write_file", "plugin_tool", "web_search"} {
		if !slices.Contains(got, tool) {
			t.Errorf("apply_cline_edits offered %q, want %s among them (the world's setup is not what the test thinks)", got, tool)
		}
	}
	for _, m := range []string{mcpMark, hookMark, pluginMark} {
		if _, err := os.Stat(m); err != nil {
			t.Errorf("apply_cline_edits: %s is missing: %v", filepath.Base(m), err)
		}
	}
}

// TestAnalysisRefusesWorkspaceHooks: a repository with its own Cline hook (code the CLI runs on
// every start, which no setting switches off) is not analysed on the host; the call fails at
// once naming the directory, and the hook never ran.
func TestAnalysisRefusesWorkspaceHooks(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("done")))
	mark := filepath.Join(w.root, "repo-hook-ran")
	writeFile(t, filepath.Join(w.work, ".clinerules", "hooks", "TaskStart"), fmt.Sprintf("#!/bin/bash\ntouch %s\necho '{}'\n", mark), 0o755)
	git(t, w.work, "add", "-A")
	git(t, w.work, "commit", "-q", "-m", "hook")
	for _, tool := range []string{"ask_cline", "ask_cline_workspace"} {
		res, sc := w.call(tool, map[string]any{"prompt": "Summarise the repository please"})
		mcpsession.WantKind(t, res, sc, "launch_failed")
		if msg := mcpsession.Str(sc, "message"); !strings.Contains(msg, filepath.Join(".clinerules", "hooks")) || !strings.Contains(msg, "docker") {
			t.Errorf("%s: got message %q, want it to name the hooks directory and the docker fix", tool, msg)
		}
		wantAttempts(t, sc, 1)
	}
	w.chats(0)
	if _, err := os.Stat(mark); err == nil {
		t.Error("the repository's hook ran")
	}
}

// lastOf is the content of the last message with role, or "".
func lastOf(msgs [][2]string, role string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i][0] == role {
			return msgs[i][1]
		}
	}
	return ""
}
