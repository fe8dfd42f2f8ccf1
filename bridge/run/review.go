package run

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// maxReviewPatch bounds the diff handed to Cline in the prompt (the prompt is one argument of
// the CLI, and a Windows command line holds 32,767 characters); a longer change is listed per
// file and read from the worktree.
var maxReviewPatch = map[bool]int{false: 60000, true: 12000}[runtime.GOOS == "windows"]

// reviewSpace is review_cline's: the range under review is resolved on the host before the run
// (for uncommitted work, a snapshot commit of the working tree: the user's index, stash and files
// are never touched), Cline runs in a fresh detached worktree of the range's head with the
// analysis policy, and its answer's findings block is read back and checked against the range.
type reviewSpace struct {
	*worktreeSpace
	target, focus string
	rng           review.Range
	report        *review.Report
}

func (w *reviewSpace) prepare(ctx context.Context, res *Result) (string, []string, *failure) {
	kind, rev, err := review.ParseTarget(w.target)
	if err != nil {
		return "", nil, &failure{cline.KindLaunchFailed, err.Error()}
	}
	repo, err := w.git.Open(ctx, w.cwd)
	if err != nil {
		if errors.Is(err, git.ErrNotGit) {
			return "", nil, &failure{cline.KindWorkspaceNotGit, fmt.Sprintf("cwd %s is not inside a git repository; review_cline reviews a change in one", w.cwd)}
		}
		return "", nil, &failure{cline.KindWorkspaceSetupFailed, "could not inspect the repository: " + err.Error()}
	}
	rv, err := w.git.ReviewOf(ctx, repo, kind, rev, maxReviewPatch)
	if err != nil {
		if ctx.Err() != nil {
			return "", nil, &failure{cline.KindCancelled, "the call was cancelled while the change under review was read"}
		}
		if errors.Is(err, git.ErrNoCommit) || errors.Is(err, git.ErrBadRef) {
			return "", nil, &failure{cline.KindWorkspaceSetupFailed, fmt.Sprintf("target %s: %v", w.target, err)}
		}
		return "", nil, &failure{cline.KindWorkspaceSetupFailed, "could not read the change under review: " + err.Error()}
	}
	target := kind
	if rev != "" {
		target += ":" + rev
	}
	w.report = &review.Report{Target: target, Base: rv.Base, Head: rv.Head, Files: fileStats(rv.Files),
		FilesTruncated: rv.FilesTruncated, DiffTruncated: rv.PatchTruncated, Findings: []review.Finding{}}
	res.Review = w.report
	w.rng = review.Range{Target: target, Base: rv.Base, Head: rv.Head, Files: w.report.Files, Patch: rv.Patch, Truncated: rv.PatchTruncated}
	var warns []string
	if len(rv.Files) == 0 {
		warns = append(warns, fmt.Sprintf("the range under review (%s) changes nothing", target))
	}
	w.at = rv.Head
	dir, more, f := w.worktreeSpace.prepare(ctx, res)
	return dir, append(warns, more...), f
}

// prompt is the call's task: the review instructions, the change, and the caller's own words.
func (w *reviewSpace) prompt(extra string) string { return review.Prompt(w.rng, w.focus, extra) }

// finish reads the findings from a successful answer (a block that does not parse leaves the
// text as the review, with a warning) and releases the worktree.
func (w *reviewSpace) finish(ctx context.Context, res Result, wrote bool) Result {
	if res.OK && w.report != nil {
		fs, summary, ok, warns := review.Parse(res.Text, w.info.Path)
		review.Check(fs, w.report.Files, w.rng.Patch)
		w.report.Parsed, w.report.Summary = ok, summary
		if fs != nil {
			w.report.Findings = fs
		}
		res.Warnings = append(res.Warnings, warns...)
	}
	return w.worktreeSpace.finish(ctx, res, wrote)
}

func fileStats(fs []git.FileChange) []review.FileStat {
	out := make([]review.FileStat, 0, len(fs))
	for _, f := range fs {
		out = append(out, review.FileStat{Path: f.Path, OldPath: f.OldPath, Status: f.Status, Added: f.Added, Deleted: f.Deleted, Binary: f.Binary})
	}
	return out
}
