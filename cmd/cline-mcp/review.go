package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// reviewFlags are the flags of `cline-mcp review`, besides the server's: the review_cline call
// a CI job makes without an MCP client, and what it writes.
type reviewFlags struct {
	cwd, target, focus, prompt string
	format, out, failOn        string
	timeout                    int
}

// Exit codes of `cline-mcp review`.
const (
	reviewPassed   = 0 // no finding at or above --fail-on
	reviewFindings = 1 // findings at or above --fail-on
	reviewFailed   = 3 // the review did not run to an answer (its kind and message on stderr)
)

func (f *reviewFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cwd, "cwd", ".", "review: the git checkout to review")
	fs.StringVar(&f.target, "target", "uncommitted", "review: "+review.TargetRule)
	fs.StringVar(&f.focus, "focus", "", "review: what the review should look at hardest")
	fs.StringVar(&f.prompt, "prompt", "", "review: extra instructions for the reviewer")
	fs.StringVar(&f.format, "format", "text", "review: what is written: text, json (the tool's result) or sarif (SARIF 2.1.0)")
	fs.StringVar(&f.out, "out", "", "review: the file to write (default: stdout)")
	fs.StringVar(&f.failOn, "fail-on", "", "review: exit 1 when a finding has this severity or a higher one (critical, high, medium, low, info); empty: never")
	fs.IntVar(&f.timeout, "timeout", 600, "review: seconds one attempt may take")
}

// checkFor validates the review flags of cmd review before anything runs.
func (f *reviewFlags) checkFor(cmd string) error {
	if cmd != "review" {
		return nil
	}
	if _, _, err := review.ParseTarget(f.target); err != nil {
		return err
	}
	switch f.format {
	case "text", "json", "sarif":
	default:
		return fmt.Errorf("--format must be text, json or sarif, not %q", f.format)
	}
	if f.failOn != "" && !review.Severity(f.failOn).AtLeast(review.Info) {
		return fmt.Errorf("--fail-on must be critical, high, medium, low or info, not %q", f.failOn)
	}
	if f.timeout < 1 || f.timeout > 7200 {
		return fmt.Errorf("--timeout must be between 1 and 7200 seconds")
	}
	return nil
}

// reviewMain runs one review_cline call in-process (the server's flags choose Cline, isolation,
// Docker and limits) and writes its result; progress goes to stderr.
func reviewMain(ctx context.Context, cfg *config, f *reviewFlags, log *slog.Logger, stdout, stderr io.Writer) int {
	cwd, err := filepath.Abs(f.cwd)
	if err != nil {
		fmt.Fprintf(stderr, "cline-mcp review: %v\n", err)
		return 2
	}
	// The watchdog takes the server's flags only: handed a review flag it would exit at once
	// and leave the review without its lifeline.
	cfg.args = watchdogArgs(cfg.args)
	// A closed terminal or a parent that hangs up ends the review like Ctrl-C: with its cleanup
	// and a message, not silently by the default action.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	runner, cleanup, err := buildRunner(ctx, cfg, log, nil)
	if err != nil {
		fmt.Fprintf(stderr, "cline-mcp review: %v\n", err)
		return reviewFailed
	}
	defer cleanup()
	prompt := f.prompt
	call := run.Call{Tool: run.ReviewCline, Prompt: prompt, Cwd: cwd, Target: f.target, Focus: f.focus,
		Thinking: "none", TimeoutSeconds: f.timeout, Isolation: sandbox.Isolation(cfg.isolation)}
	res := runner.Do(ctx, call, func(m string) { fmt.Fprintf(stderr, "review: %s\n", m) })
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "review: warning: %s\n", w)
	}
	if !res.OK {
		fmt.Fprintf(stderr, "cline-mcp review: %s: %s\n", res.Kind, res.Message)
		return reviewFailed
	}
	out := stdout
	if f.out != "" {
		file, err := os.Create(f.out)
		if err != nil {
			fmt.Fprintf(stderr, "cline-mcp review: %v\n", err)
			return reviewFailed
		}
		defer file.Close()
		out = file
	}
	if err := writeReview(out, f.format, res); err != nil {
		fmt.Fprintf(stderr, "cline-mcp review: %v\n", err)
		return reviewFailed
	}
	return reviewExit(res.Review, review.Severity(f.failOn), stderr)
}

// watchdogArgs is args (parsed without error by the review's flag set) without the review's own
// flags: what `cline-mcp watchdog` accepts after its "--".
func watchdogArgs(args []string) []string {
	all := newFlags(io.Discard)
	(&config{}).register(all)
	own := newFlags(io.Discard)
	(&reviewFlags{}).register(own)
	own.VisitAll(func(f *flag.Flag) { all.Var(f.Value, f.Name, f.Usage) })
	out := []string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return append(out, args[i:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := all.Lookup(name)
		takesNext := f != nil && !hasValue && !isBoolFlag(f)
		if own.Lookup(name) == nil {
			out = append(out, a)
			if takesNext && i+1 < len(args) {
				out = append(out, args[i+1])
			}
		}
		if takesNext {
			i++
		}
	}
	return out
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// writeReview writes a successful review in format.
func writeReview(w io.Writer, format string, res run.Result) error {
	rv := res.Review
	if rv == nil {
		rv = &review.Report{Findings: []review.Finding{}}
	}
	switch format {
	case "sarif":
		b, err := review.SARIF(*rv, currentVersion())
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "json":
		b, err := json.MarshalIndent(map[string]any{"ok": true, "text": res.Text, "review": rv, "warnings": res.Warnings,
			"enforcement": res.Enforcement}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(res.Text) + "\n\n")
	fmt.Fprintf(&b, "Reviewed %s (%s..%s): %d file(s), %d finding(s)\n", rv.Target, review.ShortID(rv.Base), review.ShortID(rv.Head), len(rv.Files), len(rv.Findings))
	for _, f := range rv.Findings {
		loc := f.File
		if f.Line > 0 {
			loc += fmt.Sprintf(":%d", f.Line)
		}
		outside := ""
		switch {
		case f.PathDropped != "":
			outside = " (no location: " + f.PathDropped + ")"
		case f.OutsideDiff:
			outside = " (outside the change)"
		}
		if loc != "" {
			loc += " "
		}
		fmt.Fprintf(&b, "- [%s] %s%s%s\n", f.Severity, loc, f.Title, outside)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// reviewExit is 1 when a finding reaches failOn.
func reviewExit(rv *review.Report, failOn review.Severity, stderr io.Writer) int {
	if failOn == "" {
		return reviewPassed
	}
	// A gate fails closed: an answer without a findings block that parsed is no verdict.
	if rv == nil || !rv.Parsed {
		fmt.Fprintln(stderr, "cline-mcp review: no verdict: Cline's answer held no findings block that parsed (--fail-on needs one); exit 3")
		return reviewFailed
	}
	n := 0
	for _, f := range rv.Findings {
		if f.Severity.AtLeast(failOn) {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(stderr, "cline-mcp review: %d finding(s) at %s or above\n", n, failOn)
		return reviewFindings
	}
	return reviewPassed
}
