// Command cline-mcp is a stdio MCP server that hands work to the locally installed Cline CLI,
// on the host or in a hardened Docker container. `cline-mcp` (or `cline-mcp serve`) serves MCP
// on stdin/stdout; `cline-mcp doctor` checks the setup; `cline-mcp version` prints the version.
// This package is wiring only: flags and environment become configuration here and nowhere else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
)

var version = "dev"

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// realMain returns the process exit status. stdout is the MCP wire when serving: only the
// MCP server writes to it.
func realMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		cmd, args = "version", args[1:]
	}
	switch cmd {
	case "version":
		fmt.Fprintf(stdout, "cline-mcp %s (%s/%s, %s)\n", currentVersion(), runtime.GOOS, runtime.GOARCH, runtime.Version())
		return 0
	case "help":
		fs := newFlags(io.Discard)
		(&config{}).register(fs)
		usage(stdout, fs)
		return 0
	case "setup":
		return setup(args, stdout, stderr)
	case watchdogCommand:
		return watchdog(args, stderr)
	case "apply-patch":
		return applyPatchMain(args, stdin, stdout, stderr)
	case "serve", "doctor", "review", "config":
	default:
		fmt.Fprintf(stderr, "cline-mcp: unknown command %q (commands: serve, doctor, review, config, setup, apply-patch, version, help)\n", cmd)
		return 2
	}
	fs := newFlags(stderr)
	cfg := &config{}
	cfg.register(fs)
	rf := &reviewFlags{}
	if cmd == "review" {
		rf.register(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cline-mcp: unexpected arguments %q\n", fs.Args())
		return 2
	}
	origins, fileStatus, err := applyConfigFile(fs, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "cline-mcp: %v\n", err)
		return 2
	}
	if err := cfg.testEnv(os.Getenv); err != nil {
		fmt.Fprintf(stderr, "cline-mcp: %v\n", err)
		return 2
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(stderr, "cline-mcp: %v\n", err)
		return 2
	}
	if cmd == "config" {
		return showConfig(stdout, fs, cfg, origins, fileStatus)
	}
	if err := rf.checkFor(cmd); err != nil {
		fmt.Fprintf(stderr, "cline-mcp review: %v\n", err)
		return 2
	}
	logger, closeLog, err := cfg.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "cline-mcp: %v\n", err)
		return 2
	}
	defer closeLog()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "doctor":
		return doctor(ctx, cfg, stdout)
	case "review":
		return reviewMain(ctx, cfg, rf, logger, stdout, stderr)
	}
	return serve(ctx, cfg, logger, stdin, stdout)
}

func newFlags(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("cline-mcp", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {} // -help is answered by usage; parse errors are reported by flag itself
	return fs
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `cline-mcp — an MCP server that delegates work to the local Cline CLI

Usage:
  cline-mcp [serve] [flags]   serve MCP on stdin/stdout (what MCP clients run)
  cline-mcp serve --http ADDR --http-tokens FILE
                              serve MCP over streamable HTTP instead, a service for many clients, each
                              tenant with its bearer token and limits; containers only (docs/service.md)
  cline-mcp doctor [flags]    check the Cline CLI, its settings, git and Docker; exit 1 on a required failure
  cline-mcp config [flags]    show the configuration in effect and where each value came from
  cline-mcp review [flags]    run review_cline once (CI): --cwd, --target, --focus, --prompt, --format
                              text|json|sarif, --out, --fail-on <severity>, --timeout; exit 1 on findings
                              at --fail-on or above, 3 when the review did not run (docs/review.md)
  cline-mcp setup <client>    write the MCP configuration of claude-code, claude-desktop, cursor, codex or
                              vscode for this binary (cline-mcp setup --help; --print only shows it)
  cline-mcp apply-patch [FILE] apply the patch apply_cline_edits returned over --http to the checkout at
                              --dir, checked as hostile input; exit 3 refused, 4 wrong base, 5 does not
                              apply (docs/service.md)
  cline-mcp version           print the version (also --version)
  cline-mcp help              this text
  cline-mcp watchdog ...      internal: the lifeline watchdog serve starts (not for direct use)

Flags a client's server entry sets (every setting, with the rest, can also go in the configuration
file, which these flags override: docs/configuration.md; cline-mcp config shows what is in effect):
`)
	printFlagGroups(w, fs)
}
