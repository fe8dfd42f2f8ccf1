package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/clientconfig"
	configfile "github.com/cline-mcp/cline-mcp/config"
)

// `cline-mcp setup <client>` writes one MCP client's configuration for this binary: the absolute
// path of the running executable and the server flags given, merged into the client's file
// without losing anything in it (package clientconfig). --print shows the result instead of
// writing it.

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
`, clientconfig.Names())
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
	client, ok := clientconfig.Find(args[0])
	if !ok {
		fmt.Fprintf(stderr, "cline-mcp setup: unknown client %q (clients: %s)\n", args[0], clientconfig.Names())
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
	cfg.args = serverArgs(fs) // validate refuses a flag of the other container engine, as serve does
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(stderr, "cline-mcp setup: %v\n", err)
		return 2
	}
	if err := clientEntryFlags(fs); err != nil {
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
	return runSetup(client, opts, clientconfig.Entry{Command: exe, Args: serverArgs(fs)}, os.Getenv, stdout, stderr)
}

func setupFlags(out io.Writer) (*flag.FlagSet, *setupOptions) {
	fs := newFlags(out)
	opts := &setupOptions{}
	fs.BoolVar(&opts.print, "print", false, "show the configuration file as it would be written; change nothing")
	fs.StringVar(&opts.name, "name", "cline", "name of the server entry in the client's configuration")
	fs.StringVar(&opts.config, "config", "", "the client's configuration file (default: the client's own per-user file)")
	return fs, opts
}

// clientEntryFlags refuses a server flag set on fs that a client's entry does not carry (one not
// in --help): a setting of the machine belongs in the configuration file, once for every client.
func clientEntryFlags(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil || f.Name == "print" || f.Name == "name" || f.Name == "config" || slices.Contains(configfile.HelpFlags(), f.Name) {
			return
		}
		if k, ok := configfile.KeyOf(f.Name); ok {
			section, key, _ := strings.Cut(k.Name, ".")
			err = fmt.Errorf("--%s is set once per machine, not per client: put it in the configuration file (%s) as [%s] %s = ... (docs/configuration.md); a client's entry carries only the flags of cline-mcp --help",
				f.Name, configPathHint(), section, key)
		}
	})
	return err
}

// configPathHint names the user's configuration file for a message.
func configPathHint() string {
	if p := configfile.DefaultPath(); p != "" {
		return p
	}
	return "<user config dir>/cline-mcp/config.toml"
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
func clientPath(client clientconfig.Client, opts *setupOptions, env func(string) string) (string, error) {
	if opts.config != "" {
		return filepath.Abs(opts.config)
	}
	return client.DefaultPath(env)
}

func runSetup(client clientconfig.Client, opts *setupOptions, entry clientconfig.Entry, env func(string) string, stdout, stderr io.Writer) int {
	path, err := clientPath(client, opts, env)
	if err != nil {
		fmt.Fprintf(stderr, "cline-mcp setup: %v\n", err)
		return 1
	}
	if opts.print {
		snippet, err := clientconfig.Print(client, opts.name, entry)
		if err != nil {
			fmt.Fprintf(stderr, "cline-mcp setup: %s: %v\n", path, err)
			return 1
		}
		fmt.Fprintf(stdout, "# %s (%s): nothing written (--print)\n", path, client.Title)
		stdout.Write(snippet)
		return 0
	}
	res, err := clientconfig.Merge(client, path, opts.name, entry)
	if err != nil {
		fmt.Fprintf(stderr, "cline-mcp setup: %s: %v\n", path, err)
		return 1
	}
	switch {
	case res.Unchanged:
		fmt.Fprintf(stdout, "%s already starts %s as %q: nothing to change.\n", path, entry.Command, opts.name)
	case res.Backup != "":
		fmt.Fprintf(stdout, "Wrote %q to %s (backup of the previous file: %s).\n", opts.name, path, res.Backup)
	default:
		fmt.Fprintf(stdout, "Wrote %q to %s (new file).\n", opts.name, path)
	}
	nextSteps(stdout, client, env)
	return 0
}

// nextSteps says what the user does after setup: restart the client, authenticate Cline.
func nextSteps(w io.Writer, client clientconfig.Client, env func(string) string) {
	fmt.Fprintln(w, "Next:")
	fmt.Fprintf(w, "  - %s\n", client.Restart)
	if client.Name == "codex" {
		fmt.Fprintf(w, "  - `codex exec` can call %s without asking: its approval_mode is \"approve\" in the file\n",
			strings.Join(clientconfig.CodexApprovedTools, ", "))
	}
	home, _ := os.UserHomeDir()
	if c := run.SettingsCheck(settings.Path(env, home)); !c.OK {
		fmt.Fprintf(w, "  - Cline has no provider settings yet (%s): run `cline auth` first\n", c.Detail)
	}
	fmt.Fprintln(w, "  - `cline-mcp doctor` checks the Cline CLI, its settings, git and Docker")
}
