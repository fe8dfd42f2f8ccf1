package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// Evidence is a snapshot of a checkout's git state, taken before and after an apply_cline_edits
// run. Taking it never changes the user's index, files or refs; it only adds blob and tree
// objects to the object store (the same objects `git add` would write, collected by gc).
type Evidence struct {
	// Repo is the repository the snapshot was taken of, as recorded before the run. Inspect
	// and Compare use it; they never look for the repository again.
	Repo Repo
	// Dir is the work tree root the snapshot was taken in (Repo.Top).
	Dir string
	// Head is the commit HEAD points to, or "" when the current branch is unborn (no commits).
	Head string
	// Ref is the branch HEAD points to ("refs/heads/main"), or "" when HEAD is detached.
	Ref string
	// Refs maps every ref (branches, tags, remotes, notes, refs/stash) to its object id.
	Refs map[string]string
	// Index is the tree object of what is staged in the user's index, or "" when the index
	// cannot be written as a tree (unmerged entries during a conflict).
	Index string
	// Tree is the tree object of the entire working tree state: tracked files as they are on
	// disk plus untracked, non-ignored files, stored as `git add` stores them but without any
	// filter program (git's built-in end-of-line and ident conversions still apply; a file whose
	// stat data is unchanged keeps its index entry, so a Git LFS checkout keeps its pointers).
	// Symlinks are stored as links. Submodules appear as gitlinks at their recorded commit;
	// changes inside a submodule are not part of it.
	Tree string
	// Submodules fingerprints the files inside submodule work trees (stat data only), so a
	// change there is visible to CheckoutMayChange; "" when there are none.
	Submodules string
	// Nested lists directories git treats as nested repositories (they hold their own .git):
	// their files are part of Tree as ordinary files, their .git is never read.
	Nested []string
	// Incomplete is set when some files could not be read while building Tree (they vanished
	// or were unreadable during the scan). Tree is then best effort and a caller deciding
	// whether a retry is safe must treat the checkout as possibly changed.
	Incomplete bool
	// Warnings say what made the snapshot incomplete.
	Warnings []string
}

// Evidence records the repository containing dir and takes the snapshot of it that a later
// Inspect and Compare start from. It discovers the repository from dir, so call it before the
// run, never after. It returns an error wrapping ErrNotGit when dir is not inside a work tree;
// any other error means the state could not be inspected (edits_inspection_failed).
func (g *Git) Evidence(ctx context.Context, dir string) (Evidence, error) {
	repo, err := g.Open(ctx, dir)
	if err != nil {
		return Evidence{}, err
	}
	return g.Take(ctx, repo)
}

// Inspect takes a new snapshot of the checkout before was taken of. It is the way back across
// the trust boundary after a run: it works only on the repository, git dir, common dir, work
// tree and index recorded in before — never on a repository found in (or pointed to from) the
// checkout — and runs nothing a run could have configured (no hooks, filters, fsmonitor,
// textconv, credential helpers or transports). A nested .git the run created is reported as
// ordinary files. Errors mean edits_inspection_failed.
func (g *Git) Inspect(ctx context.Context, before Evidence) (Evidence, error) {
	if before.Repo.Top == "" {
		return Evidence{}, errors.New("inspect: no recorded repository")
	}
	return g.Take(ctx, before.Repo)
}

func (g *Git) Take(ctx context.Context, repo Repo) (Evidence, error) {
	ev := Evidence{Repo: repo, Dir: repo.Top}
	o := Opts{Repo: &ev.Repo}
	var snapErr error
	err := Parallel(
		func() error {
			if out, err := g.Run(ctx, o, "symbolic-ref", "-q", "HEAD"); err == nil {
				ev.Ref = strings.TrimSpace(string(out))
			} else if !ExitCode(err, 1) {
				return err
			}
			out, err := g.Run(ctx, o, "rev-parse", "--verify", "-q", "--end-of-options", "HEAD^{commit}")
			switch {
			case err == nil:
				ev.Head = strings.TrimSpace(string(out))
				if !IsObjectID(ev.Head) {
					return fmt.Errorf("resolve HEAD: unexpected output %q", ev.Head)
				}
			case ExitCode(err, 1): // unborn branch
			default:
				return err
			}
			var err2 error
			ev.Refs, err2 = g.refs(ctx, o)
			return err2
		},
		func() error { snapErr = g.Snapshot(ctx, &ev.Repo, &ev); return snapErr },
	)
	if err != nil {
		return Evidence{}, fmt.Errorf("evidence %s: %w", repo.Top, err)
	}
	if !IsObjectID(ev.Tree) {
		return Evidence{}, fmt.Errorf("evidence %s: write-tree: unexpected output %q", repo.Top, ev.Tree)
	}
	return ev, nil
}

func ExitCode(err error, code int) bool {
	var ge *GitError
	return errors.As(err, &ge) && ge.ExitCode == code
}

// refs lists every ref with its object id.
func (g *Git) refs(ctx context.Context, o Opts) (map[string]string, error) {
	out, err := g.Run(ctx, o, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, err
	}
	refs := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		id, name, ok := strings.Cut(sc.Text(), " ")
		if ok {
			refs[name] = id
		}
	}
	return refs, sc.Err()
}

// CheckoutMayChange reports whether anything a user would see differs between two snapshots:
// HEAD, the current branch, any ref, the staged index, the working tree or a submodule's files. An
// incomplete snapshot counts as changed, so a retry guard built on it errs on the side of not
// retrying.
func CheckoutMayChange(before, after Evidence) bool {
	if before.Incomplete || after.Incomplete || before.Tree == "" || after.Tree == "" {
		return true
	}
	if before.Head != after.Head || before.Ref != after.Ref || before.Tree != after.Tree ||
		before.Index != after.Index || before.Submodules != after.Submodules {
		return true
	}
	if len(before.Refs) != len(after.Refs) {
		return true
	}
	for name, id := range before.Refs {
		if after.Refs[name] != id {
			return true
		}
	}
	return false
}
