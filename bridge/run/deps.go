package run

import (
	"context"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// The Runner's dependencies, declared where they are used so the runner's decisions can be
// exercised in-process with fakes. Production wires *settings.Store and *git.Git as they are,
// and *worktree.Manager through ManagedWorktrees (its Acquire returns a *worktree.Worktree, which
// the adapter hands out as a Worktree without changing what it does).

// Settings is the user's providers.json and the bridge's writes to it: *settings.Store. The
// handles it returns are the store's own (*settings.Run, *settings.Copy): the runner reads their
// fields and gives them back to the store, never calls them, so a fake can hand out plain values.
type Settings interface {
	// File is the providers.json whose secret values every result is redacted of.
	File() string
	// Begin takes the shared hold of a default host run; after a nil error, End must be called
	// exactly once, on a ctx bounded by the epilogue.
	Begin(ctx context.Context) (*settings.Run, []string, error)
	End(ctx context.Context, hold *settings.Run) []string
	// HostCopy and PrivateCopy make the private copy of a host override run and of a container
	// run; the caller must Discard it.
	HostCopy(dstRoot string, ov settings.Override) (*settings.Copy, error)
	PrivateCopy(dstRoot string, ov settings.Override) (*settings.Copy, error)
	// ReadBack reads the run's providers.json from the copy as MergeAllowed does (no symlink,
	// FIFO or device, size-capped): the call learns the credentials in it.
	ReadBack(c *settings.Copy) ([]byte, error)
	// MergeAllowed brings a copy's refreshed credentials home; under is the default run's hold a
	// container retry belongs to (its own shared hold would block the exclusive one), or nil.
	MergeAllowed(ctx context.Context, c *settings.Copy, under *settings.Run) []string
	// EnsureFresh makes the OAuth access token a container run gets outlive until, refreshing it
	// on the host when needed; an error means the run cannot start. under as for MergeAllowed.
	EnsureFresh(ctx context.Context, ov settings.Override, until time.Time, under *settings.Run) (settings.Fresh, error)
	// Discard deletes a copy, which holds keys; idempotent.
	Discard(c *settings.Copy) error
}

// Git is the host-side git of apply_cline_edits and of the container mounts (git.Git).
type Git interface {
	Evidence(ctx context.Context, dir string) (git.Evidence, error)
	Inspect(ctx context.Context, before git.Evidence) (git.Evidence, error)
	Compare(ctx context.Context, before, after git.Evidence) (git.Change, error)
	TopLevel(ctx context.Context, dir string) (string, error)
	Open(ctx context.Context, dir string) (git.Repo, error)
	// ReviewOf is review_cline's range: its commits, files and patch.
	ReviewOf(ctx context.Context, r git.Repo, target, rev string, maxPatch int) (git.Review, error)
}

// Worktrees hands out the disposable worktrees of ask_cline_workspace (worktree.Manager).
type Worktrees interface {
	Acquire(ctx context.Context, repoDir string) (Worktree, error)
	// AcquireAt is a fresh worktree at commit (review_cline's range), never a pooled one.
	AcquireAt(ctx context.Context, repoDir, commit string) (Worktree, error)
}

// Worktree is one acquired worktree (worktree.Worktree).
type Worktree interface {
	Info() WorktreeInfo
	// Touched lists the files the run changed in it (worktree.Manager.Touched).
	Touched(ctx context.Context) ([]git.FileChange, error)
	// Release removes it or gives it back to the pool; it runs to completion on a cancelled ctx.
	Release(ctx context.Context) (worktree.Released, error)
}

// WorktreeInfo is what Acquire recorded about a worktree (the fields of worktree.Worktree).
type WorktreeInfo struct {
	Path      string
	Commit    string
	Repo      git.Repo
	Reused    bool
	Discarded []error
	Cleaned   []worktree.Finding
}

var (
	_ Git       = (*git.Git)(nil)
	_ Settings  = (*settings.Store)(nil)
	_ Worktrees = managedWorktrees{}
	_ Worktree  = managedWorktree{}
)

// ManagedWorktrees adapts a *worktree.Manager to Worktrees (nil stays nil, so New reports it).
func ManagedWorktrees(m *worktree.Manager) Worktrees {
	if m == nil {
		return nil
	}
	return managedWorktrees{m}
}

type managedWorktrees struct{ m *worktree.Manager }

func (a managedWorktrees) Acquire(ctx context.Context, repoDir string) (Worktree, error) {
	wt, err := a.m.Acquire(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	return managedWorktree{a.m, wt}, nil
}

func (a managedWorktrees) AcquireAt(ctx context.Context, repoDir, commit string) (Worktree, error) {
	wt, err := a.m.AddAt(ctx, repoDir, commit)
	if err != nil {
		return nil, err
	}
	return managedWorktree{a.m, wt}, nil
}

type managedWorktree struct {
	m  *worktree.Manager
	wt *worktree.Worktree
}

func (w managedWorktree) Info() WorktreeInfo {
	return WorktreeInfo{Path: w.wt.Path, Commit: w.wt.Commit, Repo: w.wt.Repo, Reused: w.wt.Reused, Discarded: w.wt.Discarded, Cleaned: w.wt.Cleaned}
}

func (w managedWorktree) Touched(ctx context.Context) ([]git.FileChange, error) {
	return w.m.Touched(ctx, w.wt)
}

func (w managedWorktree) Release(ctx context.Context) (worktree.Released, error) {
	return w.wt.Release(ctx)
}
