package run

import (
	"context"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// The Runner's dependencies, declared where they are used so the runner's decisions can be
// exercised in-process with fakes. Production wires the real types: *worktree.Git as it is,
// *settings.Store through StoreSettings and *worktree.Manager through ManagedWorktrees (their
// methods return concrete handles — *settings.Run, *settings.Copy, *worktree.Worktree — which the
// adapters wrap without changing what they do).

// Settings is the user's providers.json and the bridge's writes to it (settings.Store).
type Settings interface {
	// Path is the providers.json whose secret values every result is redacted of.
	Path() string
	// Begin takes the shared hold of a default host run (settings.Store.Begin); after a nil
	// error, End must be called exactly once.
	Begin(ctx context.Context) (SettingsHold, []string, error)
	// HostCopy and PrivateCopy make the private copy of a host override run and of a container
	// run (settings.Store.HostCopy, PrivateCopy); the caller must Close it.
	HostCopy(dstRoot string, ov settings.Override) (SettingsCopy, error)
	PrivateCopy(dstRoot string, ov settings.Override) (SettingsCopy, error)
	// MergeAllowed brings a copy's refreshed credentials home (settings.Store.MergeAllowed).
	MergeAllowed(c SettingsCopy) []string
	// EnsureFresh makes the OAuth access token a container run gets outlive until, refreshing it
	// on the host when needed (settings.Store.EnsureFresh); an error means the run cannot start.
	EnsureFresh(ctx context.Context, ov settings.Override, until time.Time) (settings.Fresh, error)
}

// SettingsHold is a default host run's shared hold on the settings (settings.Run).
type SettingsHold interface {
	// End repairs what the run's CLI lost and gives the hold back.
	End() []string
	// MergeAllowed merges a copy back under this hold (a container retry of a default call).
	MergeAllowed(c SettingsCopy) []string
	// EnsureFresh is Settings.EnsureFresh under this hold (settings.Run.EnsureFresh).
	EnsureFresh(ctx context.Context, ov settings.Override, until time.Time) (settings.Fresh, error)
}

// SettingsCopy is a private copy of the settings for one run (settings.Copy). It holds keys.
type SettingsCopy interface {
	Dir() string          // the data dir to mount (container) or that holds the copy
	SettingsPath() string // providers.json inside Dir
	Target() string       // the only provider block a container copy holds
	Warnings() []string   // why the copy holds less than it should
	// ReadBack reads the run's providers.json from the copy as MergeAllowed does (no symlink,
	// FIFO or device, size-capped): the call learns the credentials in it.
	ReadBack() ([]byte, error)
	Close() error // deletes the copy; idempotent
}

// Git is the host-side git of apply_cline_edits and of the container mounts (worktree.Git).
type Git interface {
	Evidence(ctx context.Context, dir string) (worktree.Evidence, error)
	Inspect(ctx context.Context, before worktree.Evidence) (worktree.Evidence, error)
	Compare(ctx context.Context, before, after worktree.Evidence) (worktree.Change, error)
	TopLevel(ctx context.Context, dir string) (string, error)
	Open(ctx context.Context, dir string) (worktree.Repo, error)
}

// Worktrees hands out the disposable worktrees of ask_cline_workspace (worktree.Manager).
type Worktrees interface {
	Acquire(ctx context.Context, repoDir string) (Worktree, error)
}

// Worktree is one acquired worktree (worktree.Worktree).
type Worktree interface {
	Info() WorktreeInfo
	// Touched lists the files the run changed in it (worktree.Manager.Touched).
	Touched(ctx context.Context) ([]worktree.FileChange, error)
	// Release removes it or gives it back to the pool; it runs to completion on a cancelled ctx.
	Release(ctx context.Context) (worktree.Released, error)
}

// WorktreeInfo is what Acquire recorded about a worktree (the fields of worktree.Worktree).
type WorktreeInfo struct {
	Path      string
	Commit    string
	Repo      worktree.Repo
	Reused    bool
	Discarded []error
	Cleaned   []worktree.Finding
}

var (
	_ Git          = (*worktree.Git)(nil)
	_ Settings     = storeSettings{}
	_ SettingsHold = storeHold{}
	_ SettingsCopy = storeCopy{}
	_ Worktrees    = managedWorktrees{}
	_ Worktree     = managedWorktree{}
)

// StoreSettings adapts a *settings.Store to Settings (nil stays nil, so New reports it).
func StoreSettings(s *settings.Store) Settings {
	if s == nil {
		return nil
	}
	return storeSettings{s}
}

type storeSettings struct{ s *settings.Store }

func (a storeSettings) Path() string { return a.s.Path }

func (a storeSettings) Begin(ctx context.Context) (SettingsHold, []string, error) {
	r, warns, err := a.s.Begin(ctx)
	if err != nil {
		return nil, warns, err
	}
	return storeHold{r}, warns, nil
}

func (a storeSettings) HostCopy(dstRoot string, ov settings.Override) (SettingsCopy, error) {
	return wrapCopy(a.s.HostCopy(dstRoot, ov))
}

func (a storeSettings) PrivateCopy(dstRoot string, ov settings.Override) (SettingsCopy, error) {
	return wrapCopy(a.s.PrivateCopy(dstRoot, ov))
}

func (a storeSettings) MergeAllowed(c SettingsCopy) []string { return a.s.MergeAllowed(unwrapCopy(c)) }

func (a storeSettings) EnsureFresh(ctx context.Context, ov settings.Override, until time.Time) (settings.Fresh, error) {
	return a.s.EnsureFresh(ctx, ov, until)
}

type storeHold struct{ r *settings.Run }

func (h storeHold) End() []string                        { return h.r.End() }
func (h storeHold) MergeAllowed(c SettingsCopy) []string { return h.r.MergeAllowed(unwrapCopy(c)) }

func (h storeHold) EnsureFresh(ctx context.Context, ov settings.Override, until time.Time) (settings.Fresh, error) {
	return h.r.EnsureFresh(ctx, ov, until)
}

type storeCopy struct{ c *settings.Copy }

func wrapCopy(c *settings.Copy, err error) (SettingsCopy, error) {
	if err != nil {
		return nil, err
	}
	return storeCopy{c}, nil
}

// unwrapCopy returns the store's own copy; a copy made by anything but a storeSettings is a
// wiring error.
func unwrapCopy(c SettingsCopy) *settings.Copy { return c.(storeCopy).c }

func (c storeCopy) Dir() string               { return c.c.Dir }
func (c storeCopy) SettingsPath() string      { return c.c.SettingsPath }
func (c storeCopy) Target() string            { return c.c.Target }
func (c storeCopy) Warnings() []string        { return c.c.Warnings }
func (c storeCopy) Close() error              { return c.c.Close() }
func (c storeCopy) ReadBack() ([]byte, error) { return c.c.ReadBack() }

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

type managedWorktree struct {
	m  *worktree.Manager
	wt *worktree.Worktree
}

func (w managedWorktree) Info() WorktreeInfo {
	return WorktreeInfo{Path: w.wt.Path, Commit: w.wt.Commit, Repo: w.wt.Repo, Reused: w.wt.Reused, Discarded: w.wt.Discarded, Cleaned: w.wt.Cleaned}
}

func (w managedWorktree) Touched(ctx context.Context) ([]worktree.FileChange, error) {
	return w.m.Touched(ctx, w.wt)
}

func (w managedWorktree) Release(ctx context.Context) (worktree.Released, error) {
	return w.wt.Release(ctx)
}
