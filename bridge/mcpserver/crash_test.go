//go:build unix

package mcpserver_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestServerKilledEndsItsClineRuns: a server killed with SIGKILL (a force-quit client, the OOM
// killer) cannot clean up, yet its lifeline watchdog ends the Cline process group within a few
// seconds — before any new server starts — and removes the call's private dir (it holds the
// settings copy). The run is started first and proven alive, so a pass cannot come from a run
// that never ran.
func TestServerKilledEndsItsClineRuns(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	rec := e.hangingWorkspaceRun()
	if !alive(rec.PID) {
		t.Fatalf("the hanging run %d is not running; the test would prove nothing", rec.PID)
	}
	calls, _ := filepath.Glob(filepath.Join(e.root, "tmp", "cline-mcp-call-*"))
	if len(calls) == 0 {
		t.Fatal("no private call dir while the run hangs")
	}
	killed := time.Now()
	if err := e.sess.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	if !eventually(5*time.Second, func() bool { return !alive(rec.PID) && !groupAlive(rec.PGID) }) {
		t.Fatalf("Cline (pid %d, group %d) still runs 5 s after the server was killed", rec.PID, rec.PGID)
	}
	t.Logf("Cline's process group was gone %v after the server's SIGKILL", time.Since(killed).Round(time.Millisecond))
	if !eventually(5*time.Second, func() bool {
		left, _ := filepath.Glob(filepath.Join(e.root, "tmp", "cline-mcp-call-*"))
		return len(left) == 0
	}) {
		left, _ := filepath.Glob(filepath.Join(e.root, "tmp", "cline-mcp-call-*"))
		t.Errorf("private call dirs left after the server died: %v", left)
	}
	for _, c := range calls {
		if _, err := os.Stat(c); !os.IsNotExist(err) {
			t.Errorf("%s still exists", c)
		}
	}
}
