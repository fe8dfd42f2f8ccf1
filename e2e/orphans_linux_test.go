package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestOrphansSweptAtStart: when the lifeline is lost too (its watchdog killed before the server),
// the Cline process of a killed server runs on — proven first — until the next server starts:
// its start-up sweep finds the process by the instance marker in its environment and ends it.
func TestOrphansSweptAtStart(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	rec := e.hangingWorkspaceRun()
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
	// Nothing of ours is left to end the run. (Any server starting anywhere on the machine now
	// would sweep it — the same mechanism — so the check comes at once, not after a pause.)
	if !alive(rec.PID) {
		t.Fatalf("Cline %d died with its server although the lifeline was gone; the test would prove nothing", rec.PID)
	}
	newEnvLike(t, e)
	if !mcpsession.Eventually(10*time.Second, func() bool { return !alive(rec.PID) }) {
		t.Errorf("the orphaned Cline %d still runs after a new server started", rec.PID)
	}
}

// watchdogOf finds the lifeline watchdog of the server with pid server by its command line.
func watchdogOf(t *testing.T, server int) int {
	t.Helper()
	var found int
	mcpsession.Eventually(5*time.Second, func() bool {
		ents, _ := os.ReadDir("/proc")
		for _, ent := range ents {
			pid, err := strconv.Atoi(ent.Name())
			if err != nil {
				continue
			}
			b, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
			args := bytes.Split(b, []byte{0})
			if len(args) > 3 && string(args[1]) == "watchdog" && bytes.Contains(args[3], []byte("-"+strconv.Itoa(server)+"-")) {
				found = pid
				return true
			}
		}
		return false
	})
	return found
}
