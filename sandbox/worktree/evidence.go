package worktree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Evidence is a snapshot of a checkout's git state, taken before and after an apply_cline_edits
// run. Taking it never changes the user's index, files or refs; it only adds blob and tree
// objects to the object store (the same objects `git add` would write, collected by gc).
type Evidence struct {
	// Dir is the work tree root the snapshot was taken in.
	Dir string
	// Head is the commit HEAD points to, or "" when the current branch is unborn (no commits).
	Head string
	// Ref is the branch HEAD points to ("refs/heads/main"), or "" when HEAD is detached.
	Ref string
	// Status is the raw output of `git status --porcelain=v2 -z --untracked-files=all`.
	Status []byte
	// Refs maps every ref (branches, tags, remotes, notes, refs/stash) to its object id.
	Refs map[string]string
	// Index is the tree object of what is staged in the user's index, or "" when the index
	// cannot be written as a tree (unmerged entries during a conflict).
	Index string
	// Tree is the tree object of the entire working tree state: tracked files as they are on
	// disk plus untracked, non-ignored files. Submodules appear as gitlinks at their checked-out
	// commit; changes inside a submodule are not part of it.
	Tree string
	// Incomplete is set when some files could not be read while building Tree (they vanished
	// or were unreadable during the scan, even after one retry). Tree is then best effort and
	// a caller deciding whether a retry is safe must treat the checkout as possibly changed.
	Incomplete bool
	// Warnings say what made the snapshot incomplete.
	Warnings []string
}

// Evidence takes a snapshot of the work tree containing dir. It returns an error wrapping
// ErrNotGit when dir is not inside a work tree; any other error means the state could not be
// inspected (edits_inspection_failed).
func (g *Git) Evidence(ctx context.Context, dir string) (Evidence, error) {
	info, err := g.inspect(ctx, dir)
	if err != nil {
		return Evidence{}, err
	}
	ev := Evidence{Dir: info.top}
	o := runOpts{dir: info.top}

	if out, err := g.run(ctx, o, "symbolic-ref", "-q", "HEAD"); err == nil {
		ev.Ref = strings.TrimSpace(string(out))
	} else if !exitCode(err, 1) {
		return Evidence{}, fmt.Errorf("evidence %s: %w", info.top, err)
	}
	switch head, err := g.ResolveCommit(ctx, info.top, "HEAD"); {
	case err == nil:
		ev.Head = head
	case errors.Is(err, ErrNoCommit):
	default:
		return Evidence{}, fmt.Errorf("evidence %s: %w", info.top, err)
	}
	if ev.Status, err = g.run(ctx, o, "status", "--porcelain=v2", "-z", "--untracked-files=all",
		"--ignore-submodules=none"); err != nil {
		return Evidence{}, fmt.Errorf("evidence %s: %w", info.top, err)
	}
	if ev.Refs, err = g.refs(ctx, info.top); err != nil {
		return Evidence{}, fmt.Errorf("evidence %s: %w", info.top, err)
	}
	if err := g.snapshotTrees(ctx, info, &ev); err != nil {
		return Evidence{}, fmt.Errorf("evidence %s: %w", info.top, err)
	}
	return ev, nil
}

func exitCode(err error, code int) bool {
	var ge *GitError
	return errors.As(err, &ge) && ge.ExitCode == code
}

// refs lists every ref with its object id.
func (g *Git) refs(ctx context.Context, dir string) (map[string]string, error) {
	out, err := g.run(ctx, runOpts{dir: dir}, "for-each-ref", "--format=%(objectname) %(refname)")
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

// snapshotTrees fills ev.Index and ev.Tree using a private copy of the index, so the user's
// index is never written. Seeding the copy from the real index lets `git add` skip every file
// whose stat data is unchanged, which keeps this fast on big repositories.
func (g *Git) snapshotTrees(ctx context.Context, info repoInfo, ev *Evidence) error {
	tmp, err := os.CreateTemp("", "cline-mcp-index-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	defer os.Remove(tmpName + ".lock")
	src, err := os.Open(info.index)
	switch {
	case err == nil:
		_, err = io.Copy(tmp, src)
		src.Close()
	case errors.Is(err, os.ErrNotExist):
		err = nil // a fresh repository has no index yet: start empty
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy index: %w", err)
	}
	if fi, _ := os.Stat(tmpName); fi != nil && fi.Size() == 0 {
		// git refuses a zero-byte index file; a missing one means "empty".
		os.Remove(tmpName)
	}
	o := runOpts{dir: info.top, env: []string{"GIT_INDEX_FILE=" + tmpName}}
	// Never write a split or sparse index into the temporary file.
	cfg := []string{"-c", "core.splitIndex=false", "-c", "index.sparse=false"}

	if out, err := g.run(ctx, o, append(cfg, "write-tree")...); err == nil {
		ev.Index = strings.TrimSpace(string(out))
	} else if ctx.Err() != nil {
		return err
	}
	// --ignore-errors keeps going past files that vanish or cannot be read mid-scan; git still
	// exits non-zero then, so try once more before settling for a best-effort tree.
	add := append(cfg, "add", "-A", "--ignore-errors")
	_, err = g.run(ctx, o, add...)
	if err != nil && ctx.Err() == nil {
		_, err = g.run(ctx, o, add...)
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		ev.Incomplete = true
		ev.Warnings = append(ev.Warnings, "some files could not be read for the git evidence: "+err.Error())
	}
	out, err := g.run(ctx, o, append(cfg, "write-tree")...)
	if err != nil {
		return err
	}
	ev.Tree = strings.TrimSpace(string(out))
	if !isObjectID(ev.Tree) {
		return fmt.Errorf("write-tree: unexpected output %q", ev.Tree)
	}
	return nil
}

// CheckoutMayChange reports whether anything a user would see differs between two snapshots:
// HEAD, the current branch, any ref, the staged index, the status, or the working tree. An
// incomplete snapshot counts as changed, so a retry guard built on it errs on the side of not
// retrying.
func CheckoutMayChange(before, after Evidence) bool {
	if before.Incomplete || after.Incomplete || before.Tree == "" || after.Tree == "" {
		return true
	}
	if before.Head != after.Head || before.Ref != after.Ref || before.Tree != after.Tree ||
		before.Index != after.Index || !bytes.Equal(before.Status, after.Status) {
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
