package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// deadInstance is the instance id of a process that ran and exited.
func deadInstance(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sleep", "0.01")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := proc.StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	host, _ := os.Hostname()
	return proc.Instance{Host: host, PID: cmd.Process.Pid, Start: start}.String()
}

// shGroup starts `sh -c script` leading a new process group, with env added to the test's
// environment (without any inherited marker). It writes the pids of script's background
// children, one per line, to the file the script gets as $PIDS, and returns the leader and them.
func shGroup(t *testing.T, script string, env ...string) (*exec.Cmd, []int) {
	t.Helper()
	pidsFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command("sh", "-c", script+"\nwait\nexec sleep 300") // the leader outlives its children
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, sandbox.InstanceEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append(env, "PIDS="+pidsFile)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	want := strings.Count(script, "echo $! >>")
	var pids []int
	for try := 0; try < 500; try++ {
		b, _ := os.ReadFile(pidsFile)
		if lines := strings.Fields(string(b)); len(lines) == want {
			for _, l := range lines {
				p, _ := strconv.Atoi(l)
				pids = append(pids, p)
			}
			waitExecSleep(t, pids)
			return cmd, pids
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the script's children never reported their pids")
	return nil, nil
}

// waitExecSleep waits until each pid runs sleep itself: `$!` is known as soon as the shell
// forks, while the environment the sweep reads is the one of the last exec, so a child read
// before `env` has exec'd sleep would still show its shell's environment.
func waitExecSleep(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		for try := 0; ; try++ {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if argv0, _, _ := strings.Cut(string(b), "\x00"); argv0 == "sleep" {
				break
			}
			if try == 500 {
				t.Fatalf("pid %d never ran sleep (cmdline %q)", pid, b)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func running(pid int) bool {
	_, err := proc.StartTime(pid) // a zombie counts as gone
	return err == nil
}

// TestSweepOrphansSparesWhatIsNotTheRun: the start-up sweep ends a dead server's run whole (the
// marker: it did run, and did take what it should), but of a process group that also holds a
// process without the dead server's marker — a live cline-mcp that dropped the inherited
// marker, or somebody else's program — it kills only the marked members, and a marked process
// that does not lead its group never takes its group (a CI job's) with it. Processes marked with
// a live instance are not touched.
func TestSweepOrphansSparesWhatIsNotTheRun(t *testing.T) {
	dead := deadInstance(t)
	host, _ := os.Hostname()
	live := proc.Self().String()
	mark := sandbox.InstanceEnv + "=" + dead
	unmark := "env -u " + sandbox.InstanceEnv + " "

	// A run of the dead server: its leader and a tool command in its group, all marked.
	run, runKids := shGroup(t, "sleep 300 & echo $! >> $PIDS", mark)
	// A CI job started from inside that run: marked leader, a `cline-mcp review` that dropped the
	// marker (unmarked), and a marked helper.
	job, jobKids := shGroup(t, unmark+"sleep 300 & echo $! >> $PIDS\nsleep 300 & echo $! >> $PIDS", mark)
	// Somebody's shell (unmarked leader) with one marked child: only the child goes.
	shell, shellKids := shGroup(t, "env "+mark+" sleep 300 & echo $! >> $PIDS")
	// A live server's run: never touched.
	liveRun, _ := shGroup(t, "sleep 300 & echo $! >> $PIDS", sandbox.InstanceEnv+"="+live)

	killed, err := SweepOrphans(func(id string) bool { return id == dead && proc.DeadOnHost(id, host) })
	if err != nil {
		t.Fatal(err)
	}
	gone := func(pids ...int) bool {
		for try := 0; try < 500; try++ {
			all := true
			for _, p := range pids {
				all = all && !running(p)
			}
			if all {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}
	if !gone(run.Process.Pid, runKids[0]) {
		t.Fatalf("the dead server's run survived the sweep (killed %v): the sweep did not run", killed)
	}
	if !gone(job.Process.Pid, jobKids[1], shellKids[0]) {
		t.Errorf("marked processes survived the sweep (killed %v)", killed)
	}
	for name, pid := range map[string]int{"the unmarked member of the CI job's group": jobKids[0],
		"the unmarked leader of a shell's group": shell.Process.Pid, "a live server's run": liveRun.Process.Pid} {
		if !running(pid) {
			t.Errorf("the sweep killed %s (pid %d; killed %v)", name, pid, killed)
		}
	}
	t.Logf("killed %v", killed)
}
