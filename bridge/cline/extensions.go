package cline

import "path/filepath"

// Where Cline 3.0.65 finds code it runs in every run besides its tools (hook scripts, plugin
// modules), read from its bundled source (the resolve*ConfigSearchPaths functions) and checked on
// the real CLI: a hook file there runs at agent start, a plugin module is imported and its tools
// are offered, whatever the tool policy. The CLI has no setting that switches either off
// (`--hooks-dir`/CLINE_HOOKS_DIR is set but never read).

// WorkspaceCodeDirs are the code directories of the workspace, relative to its root (the git top
// level of the run's directory, else the directory itself). They belong to the analysed
// repository, and nothing but removing them keeps the CLI from running them.
var WorkspaceCodeDirs = []string{
	filepath.Join(".clinerules", "hooks"),
	filepath.Join(".cline", "hooks"),
	filepath.Join(".cline", "plugins"),
}

// ClineDirCode are the code and agent directories under the Cline directory (CLINE_DIR, default
// ~/.cline): hooks, plugins, configured agents and skills. An analysis run on the host points
// CLINE_DIR at a private directory without them, which switches them off (verified on 3.0.65).
var ClineDirCode = []string{"hooks", "plugins", "agents", "skills"}

// ClineDirText are the instruction directories under the Cline directory (plain text the CLI adds
// to the system prompt, no code): the private CLINE_DIR of an analysis run links them, so the
// user's global rules and workflows still apply.
var ClineDirText = []string{"rules", "workflows"}

// UserCodeDirs are the code directories under the home directory that no setting of the CLI
// moves (they are not under CLINE_DIR): ~/Documents/Cline/Hooks, ~/Documents/Cline/Plugins and
// the Agent Plugins of ~/.agents/plugins (which may bring hooks and MCP servers). Analysis on the
// host cannot switch them off; cline-mcp reports them (doctor, and a warning per call).
func UserCodeDirs(home string) []string {
	return []string{
		filepath.Join(home, "Documents", "Cline", "Hooks"),
		filepath.Join(home, "Documents", "Cline", "Plugins"),
		filepath.Join(home, ".agents", "plugins"),
	}
}
