package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/sandbox/lifeline"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// startGroup starts `sleep 300` as the leader of its own process group, as sandbox/host does.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// reusePid starts a process group whose leader gets pid, which must be free (nil when it cannot:
// one of this process's threads took it, or 200 tries failed): it sets the
// kernel's last pid to pid-1 (ns_last_pid, root only) and starts a process, until one lands on
// pid (other processes of the machine may take it first) after the clock tick of notAt, the
// start time of the pid's last owner: start times count clock ticks (10 ms on Linux), and a
// process that took the pid within the same tick would be the same process to anyone (a real
// reuse needs the whole pid space to cycle first). It skips the test when ns_last_pid is not
// writable.
func reusePid(t *testing.T, pid int, notAt uint64) *exec.Cmd {
	t.Helper()
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("pid reuse needs root: %v", err)
			}
			t.Skipf("pid reuse needs root (ns_last_pid): %v", err)
		}
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if start, _ := proc.StartTime(cmd.Process.Pid); cmd.Process.Pid == pid && start != notAt {
			t.Cleanup(func() {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = cmd.Wait()
			})
			return cmd
		}
		sameTick := cmd.Process.Pid == pid
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if sameTick {
			time.Sleep(20 * time.Millisecond) // the pid is ours, but within its last owner's tick
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", pid)); err == nil {
			return nil // one of our own threads holds it now
		}
	}
	t.Logf("no process got pid %d in 200 tries", pid)
	return nil
}

// TestWatchdogSparesReusedPid: the server tracked a run's process group, the run's leader
// exited, and its pid went to another process group (somebody else's program) before the server
// died. The watchdog must not kill that group; it still kills a tracked group whose leader is
// the tracked process (the control: the watchdog did run its kills).
func TestWatchdogSparesReusedPid(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stderr mcpsession.LockedBuffer // the watchdog's stderr, written by the os/exec copier
	l, err := lifeline.Start([]string{exe, watchdogCommand, "--instance", "watchdog-test", "--"}, []string{"TMPDIR=" + t.TempDir()}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(10 * time.Second) })

	ours := startGroup(t)
	l.TrackGroup(ours.Process.Pid)

	// A thread of this test process (the Go runtime makes them as it likes) can take the freed
	// pid first and keep it: then another group is tried.
	var pid int
	var stranger *exec.Cmd
	for try := 0; stranger == nil && try < 20; try++ {
		gone := startGroup(t)
		pid = gone.Process.Pid
		was, err := proc.StartTime(pid)
		if err != nil {
			t.Fatal(err)
		}
		l.TrackGroup(pid) // the server crashes before it could untrack this one
		_ = gone.Process.Kill()
		_ = gone.Wait()
		stranger = reusePid(t, pid, was)
	}
	if stranger == nil {
		t.Fatal("no freed pid could be handed to a new process group in 20 tries")
	}

	if err := l.Close(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := proc.StartTime(stranger.Process.Pid); err != nil {
		t.Errorf("the watchdog killed process group %d, which a new process took over after the tracked leader exited (%v); watchdog log:\n%s", pid, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "not the recorded process group") {
		t.Errorf("the watchdog did not say why it left group %d alone; log:\n%s", pid, stderr.String())
	}
	// The control: the group whose leader is still the tracked process was killed (its leader
	// is a zombie or gone within moments of the SIGKILL).
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := proc.StartTime(ours.Process.Pid); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tracked group %d was not killed by the watchdog; log:\n%s", ours.Process.Pid, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
