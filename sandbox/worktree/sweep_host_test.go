package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// TestSweepSparesOtherHosts: a worktree root shared with another host (a container, a machine
// on the same network file system) holds entries whose owner pid means nothing here; Sweep
// leaves them alone, however dead the pid looks. The control: the same dead owner recorded with
// this host's name is swept.
func TestSweepSparesOtherHosts(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	m := newManager(t)
	elsewhere, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { elsewhere.Remove(context.Background()) })
	here, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	rewriteOwner(t, elsewhere, func(o *owner) { o.PID, o.PIDStartTime, o.Host = child.Process.Pid, 1, o.Host+"-elsewhere" })
	rewriteOwner(t, here, func(o *owner) {
		if o.Host != proc.Self().Host {
			t.Errorf("owner.json records host %q, want %q", o.Host, proc.Self().Host)
		}
		o.PID, o.PIDStartTime = child.Process.Pid, 1
	})

	removed, err := (&Manager{Root: m.Root}).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != filepath.Dir(here.Path) {
		t.Fatalf("swept %q, want only %s", removed, filepath.Dir(here.Path))
	}
	if _, err := os.Stat(elsewhere.Path); err != nil {
		t.Errorf("the other host's worktree was touched: %v", err)
	}
}
