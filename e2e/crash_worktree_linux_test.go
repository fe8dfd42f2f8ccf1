package e2e

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestCrashLeftoverWorktreeSweptAtStart: when a server dies with its lifeline (its watchdog killed
// first, as a reboot or a kill of the whole process tree does), its disposable worktree stays —
// proven first — until the next server starts: its start-up sweep removes it. (With the watchdog
// alive, the watchdog removes it at once: TestCrashLeftoverWorktreeRemovedByWatchdog.)
func TestCrashLeftoverWorktreeSweptAtStart(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	leftover := e.hangingWorkspaceRun().Cwd
	server := e.sess.Cmd.Process.Pid
	dog := watchdogOf(t, server)
	if dog == 0 {
		t.Fatalf("no lifeline watchdog for server %d", server)
	}
	_ = syscall.Kill(dog, syscall.SIGKILL)
	if !mcpsession.Eventually(5*time.Second, func() bool { return !alive(dog) }) {
		t.Fatalf("the watchdog %d survived SIGKILL", dog)
	}
	_ = e.sess.Cmd.Process.Kill()
	<-e.sess.Exited()
	killGroup(e.records()[0].PGID)
	if len(worktreeList(t, e.work)) != 2 {
		t.Fatalf("no leftover worktree after the crash: %v", worktreeList(t, e.work))
	}
	// A new server over the same temp dir sweeps it at start-up.
	newEnvLike(t, e)
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(worktreeList(t, e.work)) == 1 }) {
		t.Errorf("the leftover worktree was not swept: %v", worktreeList(t, e.work))
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the leftover dir %s still exists", leftover)
	}
}

// TestCrashLeftoverWorktreeRemovedByWatchdog: a server killed mid-run leaves no worktree: its
// watchdog, which outlives it, removes the worktree of its run without waiting for a new server.
func TestCrashLeftoverWorktreeRemovedByWatchdog(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	leftover := e.hangingWorkspaceRun().Cwd
	if len(worktreeList(t, e.work)) != 2 {
		t.Fatalf("no worktree while the run hangs: %v", worktreeList(t, e.work)) // the marker: it existed
	}
	_ = e.sess.Cmd.Process.Kill()
	<-e.sess.Exited()
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(worktreeList(t, e.work)) == 1 }) {
		t.Errorf("the watchdog left the worktree: %v", worktreeList(t, e.work))
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the leftover dir %s still exists", leftover)
	}
}

// TestWorkspacePoolSweptAfterCrash: the idle pooled worktrees of a server killed together with its
// watchdog (shown to stay) are removed by the next server's start-up sweep; with the watchdog
// alive they go at once (the watchdog sweeps the worktrees of owners that are gone).
func TestWorkspacePoolSweptAfterCrash(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, poolRepo)
	e.start("--workspace-pool", "1")
	res, sc := e.call("ask_cline_workspace", map[string]any{"prompt": "Read fake:read?path=README.md", "cwd": e.work})
	mcpsession.WantOK(t, res, sc)
	wantPool(t, sc, false, true)
	idle := e.lastCwd()
	server := e.sess.Cmd.Process.Pid
	dog := watchdogOf(t, server)
	if dog == 0 {
		t.Fatalf("no lifeline watchdog for server %d", server)
	}
	_ = syscall.Kill(dog, syscall.SIGKILL)
	if !mcpsession.Eventually(5*time.Second, func() bool { return !alive(dog) }) {
		t.Fatalf("the watchdog %d survived SIGKILL", dog)
	}
	_ = e.sess.Cmd.Process.Kill()
	<-e.sess.Exited()
	if !exists(idle) {
		t.Fatalf("the idle worktree is gone after SIGKILL; the test proves nothing")
	}
	newEnvLike(t, e, "--workspace-pool", "1")
	e.noWorktreesLeft("after the next server's sweep")
}
