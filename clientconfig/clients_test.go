package clientconfig

import (
	"path/filepath"
	"testing"
)

// TestClientPathsPerOS: each client's per-user file on Linux, macOS and Windows.
func TestClientPathsPerOS(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	want := map[string]map[string]string{
		"linux": {"claude-code": "/h/.claude.json", "claude-desktop": "/h/.config/Claude/claude_desktop_config.json",
			"cursor": "/h/.cursor/mcp.json", "codex": "/h/.codex/config.toml", "vscode": "/h/.config/Code/User/mcp.json"},
		"darwin": {"claude-code": "/h/.claude.json", "claude-desktop": "/h/Library/Application Support/Claude/claude_desktop_config.json",
			"cursor": "/h/.cursor/mcp.json", "codex": "/h/.codex/config.toml", "vscode": "/h/Library/Application Support/Code/User/mcp.json"},
		"windows": {"claude-code": "/h/.claude.json", "claude-desktop": "/roaming/Claude/claude_desktop_config.json",
			"cursor": "/h/.cursor/mcp.json", "codex": "/h/.codex/config.toml", "vscode": "/roaming/Code/User/mcp.json"},
	}
	e := env(map[string]string{"APPDATA": "/roaming"})
	for goos, paths := range want {
		for _, c := range Clients {
			got := filepath.ToSlash(c.Path(e, "/h", ConfigDirFor(e, "/h", goos), goos))
			if got != paths[c.Name] {
				t.Errorf("%s on %s: %s, want %s", c.Name, goos, got, paths[c.Name])
			}
		}
	}
	o := env(map[string]string{"CODEX_HOME": "/ch", "CLAUDE_CONFIG_DIR": "/cc"})
	for name, p := range map[string]string{"codex": "/ch/config.toml", "claude-code": "/cc/.claude.json"} {
		c, _ := Find(name)
		if got := filepath.ToSlash(c.Path(o, "/h", "/cfg", "linux")); got != p {
			t.Errorf("%s with its override variable: %s, want %s", name, got, p)
		}
	}
}
