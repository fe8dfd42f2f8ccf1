package git

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Review is the range a review covers in a recorded repository: the commit it starts from, the
// commit it looks at, the files between them and the patch (capped).
type Review struct {
	// Base is the commit the change starts from, or the empty tree's id when there is none (a
	// root commit, or uncommitted work in a repository without commits).
	Base string
	// Head is the commit under review. For uncommitted work it is a commit object made from a
	// snapshot of the working tree on top of HEAD (no ref points to it; nothing of the user's
	// index, stash or files changes).
	Head           string
	Files          []FileChange
	FilesTruncated bool
	Patch          string
	PatchTruncated bool
}

// Review targets (ReviewOf).
const (
	TargetUncommitted = "uncommitted" // staged, unstaged and untracked-but-not-ignored changes
	TargetBase        = "base"        // the merge base of a ref and HEAD, up to HEAD
	TargetCommit      = "commit"      // one commit against its first parent
)

// snapshotIdent makes the snapshot commit of uncommitted work the same object for the same state.
var snapshotIdent = []string{
	"GIT_AUTHOR_NAME=cline-mcp", "GIT_AUTHOR_EMAIL=cline-mcp@localhost", "GIT_AUTHOR_DATE=1970-01-01T00:00:00Z",
	"GIT_COMMITTER_NAME=cline-mcp", "GIT_COMMITTER_EMAIL=cline-mcp@localhost", "GIT_COMMITTER_DATE=1970-01-01T00:00:00Z",
}

// ReviewOf resolves a review target in the repository r (recorded before the run) and computes
// its files and patch (at most maxPatch bytes). target is TargetUncommitted, TargetBase with rev a
// ref, or TargetCommit with rev a commit. Like Compare it runs nothing a repository's config could
// configure: the working tree is read by Snapshot, diffs use --no-ext-diff --no-textconv.
func (g *Git) ReviewOf(ctx context.Context, r Repo, target, rev string, maxPatch int) (Review, error) {
	var rv Review
	var err error
	switch target {
	case TargetUncommitted:
		rv.Base, rv.Head, err = g.snapshotCommit(ctx, r)
	case TargetBase:
		rv.Head, err = g.ResolveCommit(ctx, r.Top, "HEAD")
		if err == nil {
			rv.Base, err = g.mergeBase(ctx, r, rev, rv.Head)
		}
	case TargetCommit:
		rv.Head, err = g.ResolveCommit(ctx, r.Top, rev)
		if err == nil {
			rv.Base, err = g.firstParent(ctx, r, rv.Head)
		}
	default:
		err = fmt.Errorf("unknown review target %q", target)
	}
	if err != nil {
		return Review{}, err
	}
	o := Opts{Repo: &r}
	if rv.Files, rv.FilesTruncated, err = g.DiffFiles(ctx, o, rv.Base, rv.Head); err != nil {
		return Review{}, fmt.Errorf("review diff: %w", err)
	}
	cw := &capWriter{max: maxPatch}
	o.Stdout = cw
	if _, err := g.Run(ctx, o, diffArgs(rv.Base, rv.Head, "--patch")...); err != nil {
		return Review{}, fmt.Errorf("review diff: %w", err)
	}
	rv.Patch, rv.PatchTruncated = string(cw.buf), cw.truncated
	return rv, nil
}

// snapshotCommit makes a commit object of the working tree's state (Snapshot: without filters,
// hooks or anything the config names) whose parent is HEAD; base is HEAD, or the empty tree.
func (g *Git) snapshotCommit(ctx context.Context, r Repo) (base, head string, err error) {
	ev, err := g.Take(ctx, r)
	if err != nil {
		return "", "", err
	}
	o := Opts{Repo: &r, Env: snapshotIdent, Stdin: strings.NewReader("cline-mcp review snapshot of uncommitted work\n")}
	args := []string{"commit-tree", ev.Tree}
	base = ev.Head
	if base != "" {
		args = append(args, "-p", base)
	} else if base, err = g.emptyTree(ctx, r); err != nil {
		return "", "", err
	}
	out, err := g.Run(ctx, o, args...)
	if err != nil {
		return "", "", fmt.Errorf("snapshot commit: %w", err)
	}
	head = strings.TrimSpace(string(out))
	if !IsObjectID(head) {
		return "", "", fmt.Errorf("snapshot commit: unexpected output %q", head)
	}
	return base, head, nil
}

// mergeBase is the best common ancestor of ref and head.
func (g *Git) mergeBase(ctx context.Context, r Repo, ref, head string) (string, error) {
	base, err := g.ResolveCommit(ctx, r.Top, ref)
	if err != nil {
		return "", err
	}
	out, err := g.Run(ctx, Opts{Repo: &r}, "merge-base", "--end-of-options", base, head)
	if ExitCode(err, 1) {
		return "", fmt.Errorf("%s and HEAD have no common history: %w", ref, ErrNoCommit)
	}
	if err != nil {
		return "", fmt.Errorf("merge-base %s: %w", ref, err)
	}
	mb := strings.TrimSpace(string(out))
	if !IsObjectID(mb) {
		return "", fmt.Errorf("merge-base %s: unexpected output %q", ref, mb)
	}
	return mb, nil
}

// firstParent is commit's first parent, or the empty tree for a root commit.
func (g *Git) firstParent(ctx context.Context, r Repo, commit string) (string, error) {
	p, err := g.ResolveCommit(ctx, r.Top, commit+"^1")
	if errors.Is(err, ErrNoCommit) {
		return g.emptyTree(ctx, r)
	}
	return p, err
}

// emptyTree is the id of the empty tree in r's object format.
func (g *Git) emptyTree(ctx context.Context, r Repo) (string, error) {
	out, err := g.Run(ctx, Opts{Repo: &r, Stdin: strings.NewReader("")}, "mktree")
	if err != nil {
		return "", fmt.Errorf("empty tree: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
