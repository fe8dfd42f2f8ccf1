package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/settings"
)

// `cline-mcp setup <client>` writes one MCP client's configuration for this binary: the absolute
// path of the running executable and the server flags given, merged into the client's file
// without losing anything in it (setup_edit.go). --print shows the result instead of writing it.

// setupClient is one MCP client setup knows: where its file is and how an entry looks there.
type setupClient struct {
	name    string
	title   string
	format  string // "json" or "toml"
	key     string // the JSON object (or TOML table) holding the servers
	typed   bool   // the entry carries "type": "stdio"
	path    func(env func(string) string, home, configDir, goos string) string
	restart string // what to do after writing
}

// codexToolTimeoutSec is Codex's tool_timeout_sec for the server: Codex stops waiting for a tool
// after 60 s by default, a call may run up to MaxTimeoutSeconds (300) plus the stop grace.
const codexToolTimeoutSec = 330

// codexApprovedTools are the tools Codex would otherwise refuse under `codex exec` (approval policy
// never): apply_cline_edits is annotated destructive, so Codex asks before calling it unless the
// tool's approval_mode (Codex's [mcp_servers.<name>.tools.<tool>] table) is "approve".
var codexApprovedTools = []string{"apply_cline_edits"}

var setupClients = []setupClient{
	{name: "claude-code", title: "Claude Code", format: "json", key: "mcpServers", typed: true,
		path: func(env func(string) string, home, _, _ string) string {
			if d := env("CLAUDE_CONFIG_DIR"); d != "" {
				return filepath.Join(d, ".claude.json")
			}
			return filepath.Join(home, ".claude.json")
		},
		restart: "check it with `claude mcp list`; a running Claude Code session picks it up after a restart"},
	{name: "claude-desktop", title: "Claude Desktop", format: "json", key: "mcpServers",
		path: func(_ func(string) string, _, configDir, _ string) string {
			return filepath.Join(configDir, "Claude", "claude_desktop_config.json")
		},
		restart: "quit Claude Desktop completely and start it again"},
	{name: "cursor", title: "Cursor", format: "json", key: "mcpServers",
		path: func(_ func(string) string, home, _, _ string) string {
			return filepath.Join(home, ".cursor", "mcp.json")
		},
		restart: "restart Cursor (or reload its MCP servers in Settings → MCP)"},
	{name: "codex", title: "Codex", format: "toml", key: "mcp_servers",
		path: func(env func(string) string, home, _, _ string) string {
			if d := env("CODEX_HOME"); d != "" {
				return filepath.Join(d, "config.toml")
			}
			return filepath.Join(home, ".codex", "config.toml")
		},
		restart: "check it with `codex mcp list`; start a new Codex session"},
	{name: "vscode", title: "VS Code", format: "json", key: "servers", typed: true,
		path: func(_ func(string) string, _, configDir, _ string) string {
			return filepath.Join(configDir, "Code", "User", "mcp.json")
		},
		restart: "reload VS Code (Developer: Reload Window) and start the server from the MCP: List Servers command"},
}

// configDirFor is os.UserConfigDir's answer for goos, from env and home: %AppData% on Windows,
// ~/Library/Application Support on macOS, $XDG_CONFIG_HOME or ~/.config elsewhere.
func configDirFor(env func(string) string, home, goos string) string {
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

func findClient(name string) (setupClient, bool) {
	i := slices.IndexFunc(setupClients, func(c setupClient) bool { return c.name == name })
	if i < 0 {
		return setupClient{}, false
	}
	return setupClients[i], true
}

func clientNames() string {
	var n []string
	for _, c := range setupClients {
		n = append(n, c.name)
	}
	return strings.Join(n, ", ")
}

// serverNamePattern keeps the entry's name a plain key in JSON, TOML and tool prefixes.
var serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// setupOptions are setup's own flags; every other flag is a server flag passed on.
type setupOptions struct {
	print  bool
	name   string
	config string
}

func setupUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage: cline-mcp setup <client> [--print] [--name cline] [--config FILE] [server flags]

Writes the MCP configuration of <client> (%s) so that it starts this
cline-mcp binary, by its absolute path, with the server flags given (e.g. --isolation docker).
An existing file is merged: everything else in it stays, a timestamped backup is written beside
it, and a file setup cannot parse is refused, not overwritten.

Setup flags:
`, clientNames())
	for _, n := range []string{"print", "name", "config"} {
		printFlag(w, fs.Lookup(n))
	}
	fmt.Fprintln(w, "\nServer flags: see cline-mcp --help.")
}

// setup is `cline-mcp setup`.
func setup(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs, _ := setupFlags(io.Discard)
		setupUsage(stdout, fs)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			return 0
		}
		return 2
	}
	client, ok := findClient(args[0])
	if !ok {
		fmt.Fprintf(stderr, "cline-mcp setup: unknown client %q (clients: %s)\n", args[0], clientNames())
		return 2
	}
	fs, opts := setupFlags(stderr)
	cfg := &config{}
	cfg.register(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			setupUsage(stdout, fs)
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cline-mcp setup: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(stderr, "cline-mcp setup: %v\n", err)
		return 2
	}
	if !serverNamePattern.MatchString(opts.name) {
		fmt.Fprintf(stderr, "cline-mcp setup: --name %q: want letters, digits, - or _ (at most 64)\n", opts.name)
		return 2
	}
	exe, err := executablePath()
	if err != nil {
		fmt.Fprintf(stderr, "cline-mcp setup: %v\n", err)
		return 1
	}
	return runSetup(client, opts, setupEntry{command: exe, args: serverArgs(fs)}, os.Getenv, stdout, stderr)
}

func setupFlags(out io.Writer) (*flag.FlagSet, *setupOptions) {
	fs := newFlags(out)
	opts := &setupOptions{}
	fs.BoolVar(&opts.print, "print", false, "show the configuration file as it would be written; change nothing")
	fs.StringVar(&opts.name, "name", "cline", "name of the server entry in the client's configuration")
	fs.StringVar(&opts.config, "config", "", "the client's configuration file (default: the client's own per-user file)")
	return fs, opts
}

// serverArgs are the server flags set on fs, as --name=value, in flag order (setup's own are left
// out); a repeatable flag gives one argument per value.
func serverArgs(fs *flag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "print", "name", "config":
			return
		}
		if m, ok := f.Value.(*multiFlag); ok {
			for _, v := range *m {
				out = append(out, "--"+f.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	return out
}

// executablePath is the absolute, symlink-free path of the running binary.
func executablePath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the path of this binary: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Abs(exe)
}

// clientPath is the file setup edits for client: --config, else the client's per-user file.
func clientPath(client setupClient, opts *setupOptions, env func(string) string) (string, error) {
	if opts.config != "" {
		return filepath.Abs(opts.config)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory: %w", err)
	}
	return client.path(env, home, configDirFor(env, home, runtime.GOOS), runtime.GOOS), nil
}

func runSetup(client setupClient, opts *setupOptions, entry setupEntry, env func(string) string, stdout, stderr io.Writer) int {
	path, err := clientPath(client, opts, env)
	if err != nil {
		fmt.Fprintf(stderr, "cline-mcp setup: %v\n", err)
		return 1
	}
	res, err := mergeClientFile(client, path, opts.name, entry, opts.print)
	if err != nil {
		fmt.Fprintf(stderr, "cline-mcp setup: %s: %v\n", path, err)
		return 1
	}
	if opts.print {
		fmt.Fprintf(stdout, "# %s (%s): nothing written (--print)\n", path, client.title)
		stdout.Write(res.content)
		return 0
	}
	switch {
	case res.unchanged:
		fmt.Fprintf(stdout, "%s already starts %s as %q: nothing to change.\n", path, entry.command, opts.name)
	case res.backup != "":
		fmt.Fprintf(stdout, "Wrote %q to %s (backup of the previous file: %s).\n", opts.name, path, res.backup)
	default:
		fmt.Fprintf(stdout, "Wrote %q to %s (new file).\n", opts.name, path)
	}
	nextSteps(stdout, client, env)
	return 0
}

// nextSteps says what the user does after setup: restart the client, authenticate Cline.
func nextSteps(w io.Writer, client setupClient, env func(string) string) {
	fmt.Fprintln(w, "Next:")
	fmt.Fprintf(w, "  - %s\n", client.restart)
	if client.name == "codex" {
		fmt.Fprintf(w, "  - `codex exec` can call %s without asking: its approval_mode is \"approve\" in the file\n",
			strings.Join(codexApprovedTools, ", "))
	}
	home, _ := os.UserHomeDir()
	if c := settingsCheck(settings.Path(env, home)); !c.ok {
		fmt.Fprintf(w, "  - Cline has no provider settings yet (%s): run `cline auth` first\n", c.detail)
	}
	fmt.Fprintln(w, "  - `cline-mcp doctor` checks the Cline CLI, its settings, git and Docker")
}
