package run

import (
	"context"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// A workspace is what one tool runs in, and the only part of a call that knows the tool's
// directory: the runner reads plan → wait → prepare → attempts → finish, and each step that
// differs between tools asks the workspace.
//
//   - prepare records, before the first attempt, what the host will rely on afterwards (the
//     pre-run git record of the checkout or worktree) and returns the directory the CLI runs in;
//   - retry may veto the retry of a failed attempt (apply_cline_edits: only when it provably
//     changed nothing);
//   - mounts are what a container sees and may write, from the pre-run record only;
//   - finish runs after the attempts on every path — success, failure, cancel — on a ctx that a
//     cancel does not end (bounded by epilogueTimeout): the diff and commit check, the worktree's
//     release.
//
// A new tool is a new Tool constant, a workspace (or one of these three) in workspaceFor, and its
// schema in bridge/mcpserver; nothing else in the runner branches on the tool's directory.
type workspace interface {
	prepare(ctx context.Context, res *Result) (dir string, warns []string, f *failure)
	retry(ctx context.Context, a attempt) string
	// record is the pre-run record of the repository the run works in (nil: none, or not yet).
	record() *git.Repo
	mounts(ctx context.Context) ([]sandbox.Mount, error)
	finish(ctx context.Context, res Result, wrote bool) Result
}

// failure ends a call before any attempt ran.
type failure struct {
	kind cline.Kind
	msg  string
}

func (r *Runner) workspaceFor(c Call) workspace {
	switch c.Tool {
	case ApplyClineEdits:
		return &checkoutSpace{git: r.cfg.Git, cwd: c.Cwd}
	case AskClineWorkspace:
		return &worktreeSpace{git: r.cfg.Git, wts: r.cfg.Worktrees, cwd: c.Cwd, leases: &r.leases, cont: c.SessionID}
	case ReviewCline:
		return &reviewSpace{worktreeSpace: &worktreeSpace{git: r.cfg.Git, wts: r.cfg.Worktrees, cwd: c.Cwd, leases: &r.leases}, target: c.Target, focus: c.Focus}
	default:
		return &cwdSpace{git: r.cfg.Git, cwd: c.Cwd, live: r.liveLayout(c.SessionID), known: &r.dirs}
	}
}

// cwdSpace is ask_cline's: the CLI runs in the call's cwd, changes nothing the host relies on, and a
// container sees the cwd (its repository when it is in one, for history) read-only.
type cwdSpace struct {
	git  Git
	cwd  string
	repo *git.Repo
	// live is the layout recorded by the session's last turn while its container is kept
	// (livesession.go): the turn that takes the container needs no git process for its shape.
	live func() (*git.Repo, bool)
	// known are the layouts of earlier calls' directories (dirlayout.go).
	known *dirLayouts
}

func (w *cwdSpace) prepare(context.Context, *Result) (string, []string, *failure) {
	return w.cwd, nil, nil
}

func (w *cwdSpace) retry(context.Context, attempt) string { return "" }
func (w *cwdSpace) record() *git.Repo                     { return w.repo }

// mounts records the cwd's repository the first time a container needs it (an analysis reads it
// and writes nothing, so there is nothing to compare afterwards).
func (w *cwdSpace) mounts(ctx context.Context) ([]sandbox.Mount, error) {
	if w.repo == nil {
		if r, ok := w.live(); ok {
			w.repo = r
		} else {
			w.repo = w.known.open(ctx, w.git, w.cwd)
		}
	}
	return git.Mounts(git.Analysis, w.repo, w.cwd)
}

func (w *cwdSpace) finish(_ context.Context, res Result, _ bool) Result { return res }
