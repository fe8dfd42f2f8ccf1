package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"os"
	"path/filepath"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// Sweep removes the leftovers of servers that died without cleaning up: every entry under Root
// whose name has our pattern and whose owner.json names a process that no longer runs (or
// whose pid now belongs to another process, told apart by its start time). Their worktrees and
// their git dirs in the repository recorded in owner.json are deleted by those recorded paths,
// like Remove. Nothing under Root is trusted unless Root is a private directory of this user
// (otherwise Sweep reports it and touches nothing) and the entry is a real 0700 directory of
// this user with a regular owner.json; entries of live processes, including this one, and
// anything that does not look like ours are never touched. Like Remove it keeps going when ctx
// is cancelled, bounded by CleanupTimeout. It returns the entry directories it removed; err
// joins the failures.
func (m *Manager) Sweep(ctx context.Context) (removed []string, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	root := m.root()
	if _, err := os.Lstat(root); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err := checkRoot(root); err != nil {
		return nil, fmt.Errorf("worktree sweep: %w", err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("worktree sweep %s: %w", root, err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !entryRE.MatchString(e.Name()) {
			continue
		}
		entry := filepath.Join(root, e.Name())
		if fi, err := os.Lstat(entry); err != nil || !fi.IsDir() || checkPrivate(fi) != nil {
			continue
		}
		data, err := git.ReadSmall(filepath.Join(entry, "owner.json"))
		if err != nil {
			continue // no owner: not ours, or an entry being created right now
		}
		var o owner
		if json.Unmarshal(data, &o) != nil || o.Tool != ownerTool || o.PID <= 0 || !filepath.IsAbs(o.Repo) {
			continue
		}
		if ownerAlive(o) {
			continue
		}
		if err := m.removeEntry(ctx, o.Repo, o.Admin, entry); err != nil {
			errs = append(errs, fmt.Errorf("worktree sweep %s: %w", entry, err))
			continue
		}
		removed = append(removed, entry)
	}
	return removed, errors.Join(errs...)
}

// ownerAlive reports whether the process that wrote o still runs (sandbox/proc: pid plus start
// time, on Linux, macOS and Windows, on the owner's own host). Where that cannot be judged — an
// owner on another host sharing the root, among them — the owner counts as alive:
// never remove what might be in use.
func ownerAlive(o owner) bool {
	if o.Host != "" && o.Host != proc.Self().Host {
		// Another machine (or container) sharing the root: its pids cannot be judged here.
		return true
	}
	if o.PIDStartTime != 0 {
		return !proc.Gone(o.PID, o.PIDStartTime)
	}
	_, err := proc.StartTime(o.PID)
	return !errors.Is(err, os.ErrNotExist)
}
