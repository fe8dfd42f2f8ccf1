// Package worktree owns every git command cline-mcp runs. It shells out to the git CLI (go-git
// cannot add linked worktrees) through one runner that disables the user's hooks and fsmonitor,
// never prompts, never uses a shell, and never inherits GIT_* variables that would redirect it to
// another repository.
//
// It provides three things:
//
//   - Evidence, Inspect and Compare for apply_cline_edits: a snapshot of HEAD, the refs, the
//     staged index and a tree object of the whole working tree (tracked and untracked,
//     non-ignored files) taken without touching the user's index or files, and the diff between
//     two snapshots, which is exactly what a run changed.
//   - Manager for ask_cline_workspace: disposable detached worktrees in a private temp dir, removed
//     even when the request was cancelled, serialised per repository, and swept at start-up when a
//     previous server crashed; with PoolSize, a pool of idle worktrees per repository that
//     Acquire cleans, moves to the requested commit and verifies before reuse.
//   - Typed errors that the bridge maps to the seed's kinds: ErrNotGit (workspace_not_git),
//     *SetupError (workspace_setup_failed), *CleanupError (workspace_cleanup_failed). Evidence and
//     Compare errors are edits_inspection_failed; Change.CommitCreated is commit_created.
//
// # Trust boundary
//
// Whatever a run could have written reaches host-side git only through the functions that take a
// record made before the run — Repo, from Open (also inside Evidence and Manager.Add):
//
//   - Git.Inspect(ctx, before) and Git.Compare(ctx, before, after): the checkout of
//     apply_cline_edits after (or between) attempts;
//   - Manager.Touched(ctx, wt) and Worktree.Remove(ctx): the workspace worktree, by wt.Repo;
//   - Worktree.Release(ctx) and Manager.Acquire(ctx, dir) on a pooled worktree (slot.check,
//     Manager.prepare): its git metadata compared with the record, a planted .git refused,
//     what git neither reports nor undoes (FIFOs, sockets, devices, hard links, permission and
//     set-id bits: Finding) removed or repaired and reported in Worktree.Cleaned, untracked
//     files deleted through an os.Root, tracked files restored and moved by git pinned to the
//     record on a private index no run can reach, and the result verified;
//   - Manager.Sweep(ctx): a crashed server's worktrees, by the paths in its owner.json.
//
// They pass the recorded git dir, common dir, work tree and index explicitly, never follow a
// .git file or a gitdir/commondir pointer, run snapshots in a shadow git dir whose only config
// is data-only settings recorded before the run (no filter, textconv, hook, fsmonitor, pager,
// credential helper or transport can be configured by the run), read the work tree without
// following symlinks out of it, and remove worktrees by recorded paths. Discovery (Open,
// Evidence, TopLevel, ResolveCommit, Manager.Add, the source repository in Manager.Acquire)
// happens only before a run. The escape tests
// beside them (escape_unix_test.go) plant each attack and prove plain git would fall for it.
//
// This package never rewrites history: it only reports what changed and suggests undo commands.
package worktree
