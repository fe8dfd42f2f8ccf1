package run

import (
	"testing"
)

// TestWorkspaceMountsNeedARecord: a workspace that may write has no mounts before it recorded its
// repository (git.Mounts' own table is in sandbox/git).
func TestWorkspaceMountsNeedARecord(t *testing.T) {
	if _, err := (&checkoutSpace{cwd: "/src/app"}).mounts(t.Context()); err == nil {
		t.Errorf("apply without a recorded layout: got mounts, want an error (never rediscover after a run)")
	}
	if _, err := (&worktreeSpace{cwd: "/src/app"}).mounts(t.Context()); err == nil {
		t.Errorf("workspace without a recorded worktree: got mounts, want an error")
	}
}
