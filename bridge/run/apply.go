package run

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// checkoutSpace is apply_cline_edits': evidence before, the run in the user's checkout (retried
// only when the first attempt provably changed nothing), evidence after, then the diff of exactly
// the run's changes and the commit guard. The user's history is never rewritten; a commit is
// reported with the undo.
//
// Only the "before" evidence discovers the repository (from cwd, before anything ran). Every
// later look — the retry guard, the evidence after, the diff, the container's mounts — crosses
// the trust boundary through worktree.Inspect/Compare with that pre-run record, so a nested
// .git, a rewritten .git/config or a redirected .git file the run left behind is never used.
type checkoutSpace struct {
	git    Git
	cwd    string
	before *git.Evidence
}

func (w *checkoutSpace) prepare(ctx context.Context, res *Result) (string, []string, *failure) {
	before, err := w.git.Evidence(ctx, w.cwd)
	if err != nil {
		if errors.Is(err, git.ErrNotGit) {
			return "", nil, &failure{cline.KindWorkspaceNotGit, fmt.Sprintf("cwd %s is not inside a git work tree; apply_cline_edits needs a git checkout so it can return the diff and forbid commits", w.cwd)}
		}
		return "", nil, &failure{cline.KindEditsInspectionFailed, "could not record the checkout's state before the run, so Cline was not started: " + err.Error()}
	}
	w.before = &before
	res.HeadBefore = before.Head
	return w.cwd, before.Warnings, nil
}

func (w *checkoutSpace) record() *git.Repo {
	if w.before == nil {
		return nil
	}
	return &w.before.Repo
}

func (w *checkoutSpace) mounts(context.Context) ([]sandbox.Mount, error) {
	return git.Mounts(git.Checkout, w.record(), w.cwd)
}

func (w *checkoutSpace) retry(ctx context.Context, a attempt) string {
	if a.toolCalls > 0 {
		return fmt.Sprintf("the first attempt made %d tool call(s), so a retry could repeat edits", a.toolCalls)
	}
	now, err := w.git.Inspect(ctx, *w.before)
	if err != nil {
		return "the checkout could not be inspected after the first attempt: " + err.Error()
	}
	if now.Incomplete || git.CheckoutMayChange(*w.before, now) {
		return "the checkout changed during the first attempt"
	}
	return ""
}

func (w *checkoutSpace) finish(ctx context.Context, res Result, _ bool) Result {
	before := *w.before
	report := &GitReport{HeadBefore: before.Head, RefBefore: before.Ref}
	res.Git = report
	res.HeadBefore = before.Head
	after, err := w.git.Inspect(ctx, before)
	var change git.Change
	if err == nil {
		change, err = w.git.Compare(ctx, before, after)
	}
	if err != nil {
		report.Error = err.Error()
		if res.OK {
			res.OK = false
			res.Kind = string(cline.KindEditsInspectionFailed)
			res.Message = "Cline finished, but the bridge could not collect the diff or check for commits: " + err.Error() +
				"\nCline's answer: " + res.Text
		}
		return res
	}
	res.Warnings = append(res.Warnings, change.Warnings...)
	fillGit(&res, report, change)
	if change.CommitCreated {
		answer := res.Text
		res.OK = false
		res.Kind = string(cline.KindCommitCreated)
		res.Retryable = false
		res.Message = commitMessage(change, answer)
	}
	return res
}

func fillGit(res *Result, report *GitReport, c git.Change) {
	diff := c.Diff
	res.Diff = &diff
	res.DiffTruncated = c.Truncated
	res.HeadAfter = c.HeadAfter
	report.HeadAfter = c.HeadAfter
	report.RefAfter = c.RefAfter
	files := make([]ChangedFile, 0, len(c.ChangedFiles))
	for _, f := range c.ChangedFiles {
		files = append(files, ChangedFile{Path: f.Path, OldPath: f.OldPath, Status: f.Status})
	}
	res.ChangedFiles = files
	report.ChangedFiles = files
	report.WorkingTree = len(files) > 0
	for _, r := range c.Refs {
		switch {
		case r.Old == "":
			if report.NewRefs == nil {
				report.NewRefs = map[string]string{}
			}
			report.NewRefs[r.Name] = r.New
		case r.New == "":
			report.DeletedRefs = append(report.DeletedRefs, r.Name)
		default:
			if report.ChangedRefs == nil {
				report.ChangedRefs = map[string]string{}
			}
			report.ChangedRefs[r.Name] = r.Old + ".." + r.New
		}
	}
	report.UndoHint = strings.Join(c.Undo, "; ")
}

func commitMessage(c git.Change, answer string) string {
	var b strings.Builder
	b.WriteString("Cline changed the repository's history, which apply_cline_edits forbids.")
	if c.HeadMoved {
		fmt.Fprintf(&b, " HEAD moved from %s to %s.", orUnborn(c.HeadBefore), orUnborn(c.HeadAfter))
	}
	var names []string
	for _, r := range c.Refs {
		switch {
		case r.Old == "":
			names = append(names, "new "+r.Name)
		case r.New == "":
			names = append(names, "deleted "+r.Name)
		default:
			names = append(names, "moved "+r.Name)
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		fmt.Fprintf(&b, " Refs: %s.", strings.Join(names, ", "))
	}
	b.WriteString(" The bridge did not rewrite your history.")
	if len(c.Undo) > 0 {
		b.WriteString(" To undo: " + strings.Join(c.Undo, "; ") + ".")
	}
	if answer != "" {
		b.WriteString("\nCline's answer: " + answer)
	}
	return b.String()
}

func orUnborn(h string) string {
	if h == "" {
		return "(no commit)"
	}
	return h
}
