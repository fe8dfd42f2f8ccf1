// Package worktree owns the disposable worktrees of ask_cline_workspace: Manager adds detached
// worktrees of a repository's HEAD in a private temp dir, removes them even when the request was
// cancelled, serialises per repository, and sweeps at start-up what a crashed server left; with
// PoolSize it keeps a pool of idle worktrees per repository that Acquire cleans, moves to the
// requested commit and verifies before reuse. Every git command runs through sandbox/git's runner,
// and everything a run could have written is reached only through the git.Repo recorded when the
// worktree was made.
//
//   - Manager.Touched(ctx, wt) and Worktree.Remove(ctx): the workspace worktree, by wt.Repo;
//   - Worktree.Release(ctx) and Manager.Acquire(ctx, dir) on a pooled worktree (slot.check,
//     Manager.prepare): its git metadata compared with the record, a planted .git refused,
//     what git neither reports nor undoes (FIFOs, sockets, devices, hard links, permission and
//     set-id bits: Finding) removed or repaired and reported in Worktree.Cleaned, untracked
//     files deleted through an os.Root, tracked files restored and moved by git pinned to the
//     record on a private index no run can reach, and the result verified;
//   - Manager.Sweep(ctx): a crashed server's worktrees, by the paths in its owner.json.
//
// Typed errors the bridge maps to the seed's kinds: *SetupError (workspace_setup_failed),
// *CleanupError (workspace_cleanup_failed). The escape tests beside them (escape_unix_test.go)
// plant each attack and prove plain git would fall for it.
package worktree
