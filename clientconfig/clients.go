// Package clientconfig edits the MCP configuration file of one client (Claude Code, Claude
// Desktop, Cursor, Codex, VS Code) so that it starts a given command: where each client keeps its
// file on each OS, how its server entry looks, and a merge into the file that keeps everything
// else in it (JSON, JSON with comments, TOML), refuses what it cannot parse, reads without
// blocking, keeps a backup and replaces the file atomically. It knows nothing of cline-mcp's flags.
package clientconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Client is one MCP client: where its file is and how an entry looks there.
type Client struct {
	Name    string
	Title   string
	Format  string // "json" or "toml"
	Key     string // the JSON object (or TOML table) holding the servers
	Typed   bool   // the entry carries "type": "stdio"
	Path    func(env func(string) string, home, configDir, goos string) string
	Restart string // what to do after writing
}

// CodexToolTimeoutSec is Codex's tool_timeout_sec for the server: Codex stops waiting for a tool
// after 60 s by default, a call may run up to MaxTimeoutSeconds (300) plus the stop grace.
const CodexToolTimeoutSec = 330

// CodexApprovedTools are the tools Codex would otherwise refuse under `codex exec` (approval policy
// never): apply_cline_edits is annotated destructive, so Codex asks before calling it unless the
// tool's approval_mode (Codex's [mcp_servers.<name>.tools.<tool>] table) is "approve".
var CodexApprovedTools = []string{"apply_cline_edits"}

// Clients are the clients this package knows, in the order help lists them.
var Clients = []Client{
	{Name: "claude-code", Title: "Claude Code", Format: "json", Key: "mcpServers", Typed: true,
		Path: func(env func(string) string, home, _, _ string) string {
			if d := env("CLAUDE_CONFIG_DIR"); d != "" {
				return filepath.Join(d, ".claude.json")
			}
			return filepath.Join(home, ".claude.json")
		},
		Restart: "check it with `claude mcp list`; a running Claude Code session picks it up after a restart"},
	{Name: "claude-desktop", Title: "Claude Desktop", Format: "json", Key: "mcpServers",
		Path: func(_ func(string) string, _, configDir, _ string) string {
			return filepath.Join(configDir, "Claude", "claude_desktop_config.json")
		},
		Restart: "quit Claude Desktop completely and start it again"},
	{Name: "cursor", Title: "Cursor", Format: "json", Key: "mcpServers",
		Path: func(_ func(string) string, home, _, _ string) string {
			return filepath.Join(home, ".cursor", "mcp.json")
		},
		Restart: "restart Cursor (or reload its MCP servers in Settings → MCP)"},
	{Name: "codex", Title: "Codex", Format: "toml", Key: "mcp_servers",
		Path: func(env func(string) string, home, _, _ string) string {
			if d := env("CODEX_HOME"); d != "" {
				return filepath.Join(d, "config.toml")
			}
			return filepath.Join(home, ".codex", "config.toml")
		},
		Restart: "check it with `codex mcp list`; start a new Codex session"},
	{Name: "vscode", Title: "VS Code", Format: "json", Key: "servers", Typed: true,
		Path: func(_ func(string) string, _, configDir, _ string) string {
			return filepath.Join(configDir, "Code", "User", "mcp.json")
		},
		Restart: "reload VS Code (Developer: Reload Window) and start the server from the MCP: List Servers command"},
}

// ConfigDirFor is os.UserConfigDir's answer for goos, from env and home: %AppData% on Windows,
// ~/Library/Application Support on macOS, $XDG_CONFIG_HOME or ~/.config elsewhere.
func ConfigDirFor(env func(string) string, home, goos string) string {
	switch goos {
	case "windows":
		if d := env("APPDATA"); d != "" {
			return d
		}
		return filepath.Join(home, "AppData", "Roaming")
	case "darwin", "ios":
		return filepath.Join(home, "Library", "Application Support")
	}
	if d := env("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(home, ".config")
}

// Find is the client called name.
func Find(name string) (Client, bool) {
	i := slices.IndexFunc(Clients, func(c Client) bool { return c.Name == name })
	if i < 0 {
		return Client{}, false
	}
	return Clients[i], true
}

// Names lists the clients' names for a message.
func Names() string {
	var n []string
	for _, c := range Clients {
		n = append(n, c.Name)
	}
	return strings.Join(n, ", ")
}

// DefaultPath is the client's per-user file on this machine.
func (c Client) DefaultPath(env func(string) string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory: %w", err)
	}
	return c.Path(env, home, ConfigDirFor(env, home, runtime.GOOS), runtime.GOOS), nil
}
