package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// reviewCmd is `cline-mcp review` over e's checkout with the server's test flags plus args, in a
// process group of its own (the test's cleanup ends it), its stderr in the returned buffer.
func reviewCmd(t *testing.T, e *env, environ []string, args ...string) (*exec.Cmd, *mcpsession.LockedBuffer) {
	t.Helper()
	argv, base := e.server(nil)
	cmd := exec.Command(bins.ClineMCP, append(append([]string{"review"}, argv...), args...)...)
	cmd.Env, cmd.Dir = append(base, environ...), e.work
	stderr := &mcpsession.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd, stderr
}

// leftovers lists what a review may leave in e's TMPDIR and checkout: private call and snapshot
// dirs, worktree entries, and worktrees registered in the checkout besides the main one.
func leftovers(t *testing.T, e *env) []string {
	t.Helper()
	tmp := filepath.Join(e.root, "tmp")
	var out []string
	for _, pat := range []string{"cline-mcp-call-*", "cline-mcp-snap-*", "cline-mcp-agent-*", "cline-mcp-worktrees/*"} {
		m, _ := filepath.Glob(filepath.Join(tmp, pat))
		out = append(out, m...)
	}
	for _, l := range strings.Split(gitOut(t, e.work, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok && p != e.work {
			out = append(out, "registered worktree "+p)
		}
	}
	return out
}

// cmdline is the argument vector of process pid.
func cmdline(pid int) []string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// TestReviewKilledLeavesNothing: `cline-mcp review` runs with its lifeline — the watchdog is
// alive while the review runs, and was handed the server's flags only — so a review killed with
// SIGKILL mid-run (a CI job cancelled) leaves no Cline process, no private dir and no worktree
// (the watchdog removes the worktrees of owners that are gone), and its stderr says why it ended.
// The marker: the Cline process, the worktree and the call's private dir existed before the kill.
func TestReviewKilledLeavesNothing(t *testing.T) {
	e := prepareEnv(t)
	dirtyCheckout(t, e.work)
	cmd, stderr := reviewCmd(t, e, nil, "--cwd", e.work, "--prompt", "fake:hang", "--timeout", "300")
	if !mcpsession.Eventually(60*time.Second, func() bool { return len(e.records()) == 1 }) {
		t.Fatalf("Cline never started; review stderr:\n%s", stderr.String())
	}
	rec := e.records()[0]
	dog := watchdogOf(t, cmd.Process.Pid)
	if dog == 0 || !alive(dog) {
		t.Fatalf("no live lifeline watchdog for review %d; review stderr:\n%s", cmd.Process.Pid, stderr.String())
	}
	argv := cmdline(dog)
	for _, a := range argv {
		for _, own := range []string{"-cwd", "-prompt", "-timeout", "-target", "-format", "-out", "-fail-on", "-focus"} {
			if strings.TrimLeft(a, "-") == strings.TrimLeft(own, "-") || strings.HasPrefix(strings.TrimLeft(a, "-"), strings.TrimLeft(own, "-")+"=") {
				t.Errorf("the watchdog was handed the review flag %q: %q", a, argv)
			}
		}
	}
	before := leftovers(t, e)
	if !alive(rec.PID) || !hasPrefixed(before, filepath.Join(e.root, "tmp", "cline-mcp-call-")) || !hasPrefixed(before, "registered worktree ") {
		t.Fatalf("before the kill: Cline %d alive=%v, leftovers %q; the test would prove nothing", rec.PID, alive(rec.PID), before)
	}

	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !mcpsession.Eventually(60*time.Second, func() bool { return !alive(rec.PID) && !alive(dog) && len(leftovers(t, e)) == 0 }) {
		t.Fatalf("after SIGKILL: Cline %d alive=%v, watchdog %d alive=%v, leftovers %q\nreview stderr:\n%s",
			rec.PID, alive(rec.PID), dog, alive(dog), leftovers(t, e), stderr.String())
	}
	if !strings.Contains(stderr.String(), "ended without cleaning up") {
		t.Errorf("the killed review's stderr does not say why it ended:\n%s", stderr.String())
	}
}

func hasPrefixed(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
