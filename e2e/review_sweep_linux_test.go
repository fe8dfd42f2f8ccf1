package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// sweepReviews and sweepFiles bound the load of TestReviewsSurviveStartupSweep: three reviews
// of a 2,000-file repository on a shared two-core machine.
const (
	sweepReviews = 3
	sweepFiles   = 2000
)

// TestReviewsSurviveStartupSweep: reviews started by a CI job that itself runs inside a run of a
// server that has died — so the job, and each `cline-mcp review` it starts, inherits that dead
// server's CLINE_MCP_INSTANCE — are live instances of their own: neither their own start-up
// sweeps nor the sweep of a server that starts while they run may kill them (before the fix
// every one of them died of SIGKILL, exit 137 with no message, leaving its worktree and call
// dir, and the job's whole process group went with it). The marker: a process of the dead
// server's run started next to them is ended by the sweep. Each review exits 0 with its
// finding; nothing is left behind.
func TestReviewsSurviveStartupSweep(t *testing.T) {
	e := prepareEnv(t)
	files := map[string]string{}
	for i := range sweepFiles {
		files[fmt.Sprintf("pkg%d/f%d.go", i/100, i)] = fmt.Sprintf("package pkg%d\n\nfunc F%d() int { return %d }\n", i/100, i, i)
	}
	gitInit(t, e.work, files)
	if err := os.WriteFile(filepath.Join(e.work, "pkg0", "f1.go"), []byte("package pkg0\n\nfunc F1() int { return 1 / 0 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dead := deadInstanceID(t)
	mark := sandbox.InstanceEnv + "=" + dead
	release := filepath.Join(e.root, "release")
	block := `{"summary": "s", "findings": [{"severity": "high", "file": "pkg0/f1.go", "line": 3, "title": "division by zero", "detail": "panics"}]}`
	argv, environ := e.server(nil)
	// The CI job: a marked shell leading its process group; the reviews join that group.
	job := exec.Command("sleep", "300")
	job.Env = append(environ, mark)
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-job.Process.Pid, syscall.SIGKILL)
		_ = job.Wait()
	})
	type outcome struct {
		err            error
		stdout, stderr string
	}
	done := make(chan outcome, sweepReviews)
	for range sweepReviews {
		cmd := exec.Command(bins.ClineMCP, append(append([]string{"review"}, argv...), "--cwd", e.work, "--format", "json",
			"--prompt", reviewAnswer(block)+"&wait_file="+release)...)
		cmd.Env, cmd.Dir = append(environ, mark), e.work
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: job.Process.Pid}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { err := cmd.Wait(); done <- outcome{err, out.String(), errb.String()} }()
	}
	if !mcpsession.Eventually(120*time.Second, func() bool { return len(e.records()) == sweepReviews }) {
		t.Fatalf("%d of %d reviews reached Cline", len(e.records()), sweepReviews)
	}
	// The marker: a leftover of the dead server's run, which a sweep must end.
	orphan := exec.Command("sleep", "300")
	orphan.Env = []string{mark}
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	orphanDone := make(chan struct{})
	go func() { _ = orphan.Wait(); close(orphanDone) }()
	t.Cleanup(func() { _ = orphan.Process.Kill(); <-orphanDone })

	e.start() // another server starts: its start-up sweep runs now, while the reviews wait
	select {
	case <-orphanDone:
	case <-time.After(60 * time.Second):
		t.Fatalf("the dead server's leftover %d was not swept: the test would prove nothing; server log:\n%s", orphan.Process.Pid, e.sess.Stderr())
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range sweepReviews {
		o := <-done
		if o.err != nil || !strings.Contains(o.stdout, "division by zero") {
			t.Errorf("review %d: %v, output %q\nstderr:\n%s", i, o.err, o.stdout, o.stderr)
		}
	}
	if left := leftovers(t, e); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
}

// deadInstanceID is the instance id of a process of this host that ran and exited.
func deadInstanceID(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sleep", "0.05")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := proc.StartTime(cmd.Process.Pid)
	_ = cmd.Wait()
	if err != nil {
		t.Skipf("the start time of a short process could not be read: %v", err)
	}
	host, _ := os.Hostname()
	return proc.Instance{Host: host, PID: cmd.Process.Pid, Start: start}.String()
}
