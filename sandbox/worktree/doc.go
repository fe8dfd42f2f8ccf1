// Package worktree owns every git command cline-mcp runs. It shells out to the git CLI (go-git
// cannot add linked worktrees) through one runner that disables the user's hooks and fsmonitor,
// never prompts, never uses a shell, and never inherits GIT_* variables that would redirect it to
// another repository.
//
// It provides three things:
//
//   - Evidence and Compare for apply_cline_edits: a snapshot of HEAD, the refs, `git status` and a
//     tree object of the whole working tree (tracked and untracked, non-ignored files) taken
//     without touching the user's index or files, and the diff between two snapshots, which is
//     exactly what a run changed.
//   - Manager for ask_cline_workspace: disposable detached worktrees in a private temp dir, removed
//     even when the request was cancelled, serialised per repository, and swept at start-up when a
//     previous server crashed.
//   - Typed errors that the bridge maps to the seed's kinds: ErrNotGit (workspace_not_git),
//     *SetupError (workspace_setup_failed), *CleanupError (workspace_cleanup_failed). Evidence and
//     Compare errors are edits_inspection_failed; Change.CommitCreated is commit_created.
//
// This package never rewrites history: it only reports what changed and suggests undo commands.
package worktree
