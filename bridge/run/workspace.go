package run

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// workspace runs ask_cline_workspace in a detached worktree of HEAD that is released after
// success, failure, timeout and cancel alike: removed, or — with the server's worktree pool on —
// kept for a later call, which undoes whatever this run changed and verifies the worktree before
// its own run starts (worktree.Manager.Acquire).
func (k *call) workspace(ctx context.Context) Result {
	top, err := k.r.cfg.Git.TopLevel(ctx, k.Cwd)
	if err != nil {
		if errors.Is(err, worktree.ErrNotGit) {
			return k.fail(cline.KindWorkspaceNotGit, fmt.Sprintf("cwd %s is not inside a git repository; ask_cline_workspace analyses a disposable worktree of a repository's HEAD", k.Cwd), false)
		}
		return k.fail(cline.KindWorkspaceSetupFailed, "could not inspect the repository: "+err.Error(), false)
	}
	lease, err := k.r.cfg.Worktrees.Acquire(ctx, k.Cwd)
	if err != nil {
		if errors.Is(err, worktree.ErrNotGit) {
			return k.fail(cline.KindWorkspaceNotGit, fmt.Sprintf("cwd %s is not inside a git repository", k.Cwd), false)
		}
		if ctx.Err() != nil {
			return k.fail(cline.KindCancelled, "the call was cancelled while the worktree was being created", false)
		}
		return k.fail(cline.KindWorkspaceSetupFailed, "could not create the disposable worktree: "+err.Error(), false)
	}
	wt := lease.Info()
	report := &WorktreeReport{Commit: wt.Commit, Path: wt.Path, Reused: wt.Reused}
	k.res.Worktree = report
	for _, err := range wt.Discarded {
		k.warnings = append(k.warnings, fmt.Sprintf("a pooled worktree failed its check before the run and was replaced by a fresh one: %v", err))
	}
	if len(wt.Cleaned) > 0 {
		k.warnings = append(k.warnings, cleanedWarning(wt.Cleaned))
	}
	k.repo = &wt.Repo // recorded at creation: mounts, the touched report and cleanup use only this
	k.dir = wt.Path
	if rel, err := filepath.Rel(top, k.Cwd); err == nil && rel != "." && filepath.IsLocal(rel) {
		k.dir = filepath.Join(wt.Path, rel)
	}

	res := k.withSettings(ctx, nil)

	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), epilogueTimeout)
	defer cancel()
	// The touched-files report costs a full status of the worktree; on the host the read-only
	// policy leaves nothing to report unless the stream says otherwise.
	if k.mayHaveWritten {
		if touched, err := lease.Touched(ectx); err == nil && len(touched) > 0 {
			for _, f := range touched {
				report.Touched = append(report.Touched, ChangedFile{Path: f.Path, OldPath: f.OldPath, Status: f.Status})
			}
		}
	}
	rel, err := lease.Release(ectx)
	if rel.Discarded != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the worktree's git metadata changed during the run (%v); it was removed instead of going back to the pool", rel.Discarded))
	}
	if len(report.Touched) > 0 {
		fate := "they were discarded with it"
		if rel.Pooled {
			fate = "the worktree went back to the pool, and they are undone before it is used again"
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("files changed inside the disposable worktree during the analysis (%d); %s", len(report.Touched), fate))
	}
	if err != nil {
		report.Removed = false
		if res.OK {
			answer := res.Text
			res.OK = false
			res.Kind = string(cline.KindWorkspaceCleanupFailed)
			res.Message = fmt.Sprintf("Cline answered, but the worktree could not be removed (leftover: %s): %v\nCline's answer: %s", wt.Path, err, answer)
			res.Text = answer
		} else {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the worktree could not be removed (leftover: %s): %v", wt.Path, err))
		}
		return res
	}
	report.Removed = !rel.Pooled
	report.Pooled = rel.Pooled
	report.Path = ""
	return res
}

// cleanedWarning names what the pool removed or repaired in a reused worktree before the run
// (worktree.Finding), at most ten entries.
func cleanedWarning(found []worktree.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the pooled worktree held what an earlier run left and git does not undo (%d entries); removed or repaired before this run: ", len(found))
	for i, f := range found[:min(len(found), 10)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.String())
	}
	if len(found) > 10 {
		b.WriteString(", ...")
	}
	return b.String()
}
