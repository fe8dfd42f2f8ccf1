package run

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// worktreeSpace is ask_cline_workspace's: a detached worktree of HEAD that is released after
// success, failure, timeout and cancel alike: removed, or — with the server's worktree pool on —
// kept for a later call, which undoes whatever this run changed and verifies the worktree before
// its own run starts (worktree.Manager.Acquire).
type worktreeSpace struct {
	git    Git
	wts    Worktrees
	cwd    string
	lease  Worktree
	info   WorktreeInfo
	report *WorktreeReport
	// leases keeps the worktree of a session between its turns; cont is the session a call
	// continues ("" for none).
	leases *leases
	cont   string
	// at is the commit of the worktree ("": HEAD, from the pool when it is on): review_cline's.
	at string
}

func (w *worktreeSpace) prepare(ctx context.Context, res *Result) (string, []string, *failure) {
	top, err := w.git.TopLevel(ctx, w.cwd)
	if err != nil {
		if errors.Is(err, git.ErrNotGit) {
			return "", nil, &failure{cline.KindWorkspaceNotGit, fmt.Sprintf("cwd %s is not inside a git repository; ask_cline_workspace analyses a disposable worktree of a repository's HEAD", w.cwd)}
		}
		return "", nil, &failure{cline.KindWorkspaceSetupFailed, "could not inspect the repository: " + err.Error()}
	}
	var warns []string
	lease := w.leases.take(w.cont)
	if w.cont != "" && lease == nil {
		warns = append(warns, "the session's worktree did not survive (the server restarted or it was released): this turn runs in a new worktree of HEAD")
	}
	switch {
	case lease != nil:
	case w.at != "":
		lease, err = w.wts.AcquireAt(ctx, w.cwd, w.at)
	default:
		lease, err = w.wts.Acquire(ctx, w.cwd)
	}
	if err != nil {
		if errors.Is(err, git.ErrNotGit) {
			return "", nil, &failure{cline.KindWorkspaceNotGit, fmt.Sprintf("cwd %s is not inside a git repository", w.cwd)}
		}
		if ctx.Err() != nil {
			return "", nil, &failure{cline.KindCancelled, "the call was cancelled while the worktree was being created"}
		}
		return "", nil, &failure{cline.KindWorkspaceSetupFailed, "could not create the disposable worktree: " + err.Error()}
	}
	w.lease, w.info = lease, lease.Info()
	w.report = &WorktreeReport{Commit: w.info.Commit, Path: w.info.Path, Reused: w.info.Reused}
	res.Worktree = w.report
	for _, err := range w.info.Discarded {
		warns = append(warns, fmt.Sprintf("a pooled worktree failed its check before the run and was replaced by a fresh one: %v", err))
	}
	if len(w.info.Cleaned) > 0 {
		warns = append(warns, cleanedWarning(w.info.Cleaned))
	}
	dir := w.info.Path
	if rel, err := filepath.Rel(top, w.cwd); err == nil && rel != "." && filepath.IsLocal(rel) {
		dir = filepath.Join(w.info.Path, rel)
	}
	return dir, warns, nil
}

func (w *worktreeSpace) retry(context.Context, attempt) string { return "" }

// record is the worktree as recorded at its creation: mounts, the touched report and cleanup use
// only this.
func (w *worktreeSpace) record() *git.Repo {
	if w.lease == nil {
		return nil
	}
	return &w.info.Repo
}

func (w *worktreeSpace) mounts(context.Context) ([]sandbox.Mount, error) {
	return git.Mounts(git.Worktree, w.record(), w.info.Path)
}

// finish lists what the run touched (it costs a full status of the worktree, so only when the run
// may have written) and releases the worktree; a release that fails turns a success into
// workspace_cleanup_failed with the answer kept.
func (w *worktreeSpace) finish(ctx context.Context, res Result, wrote bool) Result {
	report := w.report
	if res.SessionID != "" && w.leases != nil {
		// The session continues in this worktree: it is kept, with what the turns changed, until
		// the session expires or the server stops (session.go).
		w.leases.put(res.SessionID, w.lease)
		report.Kept = true
		return res
	}
	if wrote {
		if touched, err := w.lease.Touched(ctx); err == nil && len(touched) > 0 {
			for _, f := range touched {
				report.Touched = append(report.Touched, ChangedFile{Path: f.Path, OldPath: f.OldPath, Status: f.Status})
			}
		}
	}
	rel, err := w.lease.Release(ctx)
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
			res.Message = fmt.Sprintf("Cline answered, but the worktree could not be removed (leftover: %s): %v\nCline's answer: %s", w.info.Path, err, answer)
			res.Text = answer
		} else {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the worktree could not be removed (leftover: %s): %v", w.info.Path, err))
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
