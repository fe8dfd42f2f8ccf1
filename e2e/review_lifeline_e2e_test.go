//go:build e2e && linux

package e2e

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestReviewKilledLeavesNoContainer: a `cline-mcp review --isolation docker` killed with SIGKILL
// while its container runs (the marker: the container was seen running) leaves no container,
// worktree or private dir: its lifeline watchdog removes them, and says so on the review's
// stderr.
func TestReviewKilledLeavesNoContainer(t *testing.T) {
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	e := prepareEnv(t)
	dirtyCheckout(t, e.work)
	cmd, stderr := reviewCmd(t, e, nil, "--isolation", "docker", "--docker-image", mcpsession.FakeImage, "--docker-network", "none",
		"--cwd", e.work, "--prompt", "fake:hang", "--timeout", "300")
	pid := cmd.Process.Pid
	running := func() []string {
		ids, err := mcpsession.ContainersOf(pid)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if !mcpsession.Eventually(120*time.Second, func() bool { return len(running()) > 0 && len(leftovers(t, e)) > 0 }) {
		t.Fatalf("the review's container never ran; stderr:\n%s", stderr.String())
	}
	if dog := watchdogOf(t, pid); dog == 0 {
		t.Fatalf("no lifeline watchdog for review %d; stderr:\n%s", pid, stderr.String())
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !mcpsession.Eventually(90*time.Second, func() bool { return len(running()) == 0 && len(leftovers(t, e)) == 0 }) {
		for _, id := range running() {
			out, _ := exec.Command("docker", "inspect", "--format", "created {{.Created}}, {{.State.Status}}", id).CombinedOutput()
			t.Logf("left container %s: %s", id, out)
		}
		t.Fatalf("after SIGKILL: containers %v, leftovers %q\nstderr:\n%s", running(), leftovers(t, e), stderr.String())
	}
	if !strings.Contains(stderr.String(), "ended without cleaning up") {
		t.Errorf("the killed review's stderr does not say why it ended:\n%s", stderr.String())
	}
}
