package service

import (
	"context"

	"github.com/cline-mcp/cline-mcp/bridge/run"
	sgit "github.com/cline-mcp/cline-mcp/sandbox/git"
)

// patchAfter records the service's checkout at dir before an apply_cline_edits run and returns
// what, after the run, replaces the result's text diff with a binary-safe patch (sgit.Patch:
// `git diff --binary --full-index` from the state before to the state after, headed by the
// commit it applies to), so a runner can reproduce the edits exactly with `cline-mcp
// apply-patch`. The record is made before the run and is all the patch is computed from, as
// for the text diff. When the record or the patch cannot be made, the text diff stays and a
// warning says why.
func patchAfter(ctx context.Context, g *sgit.Git, dir string) func(*run.Result) {
	before, err := g.Evidence(ctx, dir)
	return func(res *run.Result) {
		if res.Diff == nil {
			return // the run collected no edits: nothing to replace
		}
		warn := func(why string) {
			res.Warnings = append(res.Warnings, "diff is the text diff only, which apply-patch refuses: "+why)
		}
		if err != nil {
			warn("the checkout could not be recorded before the run: " + err.Error())
			return
		}
		after, err := g.Inspect(ctx, before)
		if err != nil {
			warn("the checkout could not be inspected after the run: " + err.Error())
			return
		}
		p, truncated, err := g.BinaryPatch(ctx, before, after, sgit.MaxDiffBytes)
		switch {
		case err != nil:
			warn(err.Error())
		case truncated:
			res.DiffTruncated = true
			warn("the binary-safe patch is larger than 1 MiB")
		default:
			s := p.Format()
			res.Diff = &s
		}
	}
}
