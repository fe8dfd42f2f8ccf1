// Package git is the git side of the trust boundary: every git command cline-mcp runs goes
// through its one runner (Git.Run), which shells out to the git CLI with the user's hooks and
// fsmonitor off, never prompts, never uses a shell, and never inherits GIT_* variables that would
// redirect it to another repository. sandbox/worktree (the disposable worktrees, their pool and
// sweeper) composes its commands on this runner.
//
// # Record before, use only the record after
//
// Whatever a run could have written reaches host-side git only through what takes a record made
// before the run — Repo, from Open (also inside Evidence):
//
//   - Evidence, Inspect and Compare for apply_cline_edits: a snapshot of HEAD, the refs, the staged
//     index and a tree object of the whole working tree (tracked and untracked, non-ignored files)
//     taken without touching the user's index or files (Snapshot, in a shadow git dir whose only
//     config is data-only settings recorded before the run: no filter, textconv, hook, fsmonitor,
//     pager, credential helper or transport can be configured by the run), and the diff between two
//     snapshots, which is exactly what a run changed;
//   - Mounts: what a container may see and write, from the record — the checkout or worktree,
//     never a .git entry or a git dir.
//
// Calls pass the recorded git dir, common dir, work tree and index explicitly, never follow a .git
// file or a gitdir/commondir pointer, and read the work tree without following symlinks out of
// it. Discovery (Open, Evidence, TopLevel, ResolveCommit) happens only before a run. The escape
// tests beside them (escape_unix_test.go) plant each attack and prove plain git would fall for it.
//
// Typed errors the bridge maps to the seed's kinds: ErrNotGit (workspace_not_git); Evidence and
// Compare errors are edits_inspection_failed; Change.CommitCreated is commit_created. This package
// never rewrites history: it only reports what changed and suggests undo commands.
package git
