package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	sgit "github.com/cline-mcp/cline-mcp/sandbox/git"
)

// Exit statuses of apply-patch (docs/service.md#getting-edits-back).
const (
	applyOK         = 0 // applied (with --check: would apply)
	applyFailed     = 1 // not a git checkout, git failed, or another error
	applyUsage      = 2 // bad flags, unreadable input, input over --max-bytes
	applyRefused    = 3 // not a patch of the service, cut short, or touching what it may not
	applyWrongBase  = 4 // the checkout's HEAD is not the patch's base commit
	applyNotApplies = 5 // git would not apply it to the checkout as it is
)

// applyPatchMain is `cline-mcp apply-patch`: it applies the patch an apply_cline_edits call on
// the HTTP service returned (the raw patch, or the tool result's JSON holding it as diff) to
// the checkout at --dir, treating it as hostile input (sgit.ApplyPatch).
func applyPatchMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cline-mcp apply-patch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".", "the git checkout to apply to")
	unstaged := fs.Bool("unstaged", false, "apply to the work tree only (git apply), not also to the index (git apply --index)")
	check := fs.Bool("check", false, "check everything and change nothing")
	maxBytes := fs.Int64("max-bytes", 16<<20, "refuse input larger than this many bytes")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: cline-mcp apply-patch [--dir DIR] [--check] [--unstaged] [--max-bytes N] [FILE|-]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return applyOK
		}
		return applyUsage
	}
	if fs.NArg() > 1 || *maxBytes <= 0 {
		fs.Usage()
		return applyUsage
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "cline-mcp apply-patch: "+format+"\n", a...)
		return code
	}
	data, err := readPatchInput(fs.Arg(0), stdin, *maxBytes)
	if err != nil {
		return fail(applyUsage, "%v", err)
	}
	p, err := patchFromInput(data)
	if err != nil {
		return fail(applyRefused, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	files, err := (&sgit.Git{}).ApplyPatch(ctx, *dir, p, sgit.ApplyOptions{Unstaged: *unstaged, CheckOnly: *check})
	switch {
	case errors.Is(err, sgit.ErrPatchRefused):
		return fail(applyRefused, "%v", err)
	case errors.Is(err, sgit.ErrBaseMismatch):
		return fail(applyWrongBase, "%v", err)
	case errors.Is(err, sgit.ErrPatchDoesNotApply):
		return fail(applyNotApplies, "%v", err)
	case err != nil:
		return fail(applyFailed, "%v", err)
	}
	verb := "applied"
	if *check {
		verb = "would apply"
	}
	for _, f := range files {
		name := f.Path
		if f.OldPath != "" {
			name = f.OldPath + " => " + f.Path
		}
		if f.Binary {
			fmt.Fprintf(stdout, "%s\tbinary\n", name)
		} else {
			fmt.Fprintf(stdout, "%s\t+%d -%d\n", name, f.Added, f.Deleted)
		}
	}
	fmt.Fprintf(stderr, "cline-mcp apply-patch: %s %d file(s) on %s\n", verb, len(files), p.Base)
	return applyOK
}

// readPatchInput reads name ("" or "-": stdin), refusing more than limit bytes.
func readPatchInput(name string, stdin io.Reader, limit int64) ([]byte, error) {
	r := stdin
	if name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the input is larger than --max-bytes %d", limit)
	}
	return data, nil
}

// patchFromInput accepts the patch itself or the JSON of the tool result (or of the whole
// JSON-RPC response) whose structuredContent holds it as diff; a diff marked truncated is
// refused.
func patchFromInput(data []byte) (sgit.Patch, error) {
	trimmed := bytes.TrimSpace(data)
	if !bytes.HasPrefix(trimmed, []byte("{")) {
		return sgit.ParsePatch(data)
	}
	type content struct {
		Diff          *string `json:"diff"`
		DiffTruncated bool    `json:"diffTruncated"`
	}
	type toolResult struct {
		content
		StructuredContent *content `json:"structuredContent"`
	}
	var doc struct {
		toolResult
		Result *toolResult `json:"result"`
	}
	if err := json.Unmarshal(trimmed, &doc); err != nil {
		return sgit.Patch{}, fmt.Errorf("%w: the input is neither a patch nor a tool result's JSON: %v", sgit.ErrPatchRefused, err)
	}
	for _, tr := range []*toolResult{doc.Result, &doc.toolResult} {
		if tr == nil {
			continue
		}
		for _, c := range []*content{tr.StructuredContent, &tr.content} {
			if c == nil || c.Diff == nil {
				continue
			}
			if c.DiffTruncated {
				return sgit.Patch{}, fmt.Errorf("%w: the result's diff is truncated (diffTruncated): ask for a smaller change", sgit.ErrPatchRefused)
			}
			return sgit.ParsePatch([]byte(*c.Diff))
		}
	}
	return sgit.Patch{}, fmt.Errorf("%w: the JSON holds no diff (structuredContent.diff)", sgit.ErrPatchRefused)
}
