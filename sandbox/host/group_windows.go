//go:build windows

package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// killExitCode is the exit code TerminateJobObject gives every process of the job. Combined
// with the killed flag it lets exit report Code -1, Signal "SIGKILL" like on Unix, so callers
// classify a forced stop the same way everywhere.
const killExitCode = 137

// prepare creates the child suspended in a new process group: suspended so that attach can put
// it into the Job Object before it runs a single instruction (nothing it spawns can escape the
// job), a new group so that CTRL_BREAK reaches it and not us.
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED,
	}
}

type jobGroup struct {
	pid     uint32
	process windows.Handle
	job     windows.Handle
	killed  bool // kill ended a still-running main process; used only on Run's goroutine
}

// attach puts the suspended child into a new Job Object with KILL_ON_JOB_CLOSE, then resumes
// it. os/exec does not expose the primary thread handle, so the child's threads are found with
// a Toolhelp snapshot (a suspended new process has exactly one).
func attach(cmd *exec.Cmd) (group, error) {
	pid := uint32(cmd.Process.Pid)
	// os.Process holds its own handle until Wait, so pid cannot be reused meanwhile.
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|
		windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return nil, fmt.Errorf("open process %d: %w", pid, err)
	}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		_ = windows.CloseHandle(h)
		return nil, fmt.Errorf("create job object: %w", err)
	}
	g := &jobGroup{pid: pid, process: h, job: job}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		g.close()
		return nil, fmt.Errorf("set job object limits: %w", err)
	}
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		g.close()
		return nil, fmt.Errorf("assign process %d to job object: %w", pid, err)
	}
	if err := resumeThreads(pid); err != nil {
		g.kill()
		g.close()
		return nil, err
	}
	return g, nil
}

// resumeThreads resumes every thread of the (suspended) process pid.
func resumeThreads(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("snapshot threads of %d: %w", pid, err)
	}
	defer windows.CloseHandle(snap)
	var te windows.ThreadEntry32
	te.Size = uint32(unsafe.Sizeof(te))
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, oerr := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if oerr != nil {
			return fmt.Errorf("open thread %d of %d: %w", te.ThreadID, pid, oerr)
		}
		_, rerr := windows.ResumeThread(th)
		_ = windows.CloseHandle(th)
		if rerr != nil {
			return fmt.Errorf("resume thread %d of %d: %w", te.ThreadID, pid, rerr)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("list threads of %d: %w", pid, err)
	}
	if resumed == 0 {
		return fmt.Errorf("resume process %d: no thread found", pid)
	}
	return nil
}

// awaitExit waits on our own handle; the process object stays valid until cmd.Wait and the
// job outlives it, so nothing needs reaping first.
func (g *jobGroup) awaitExit() bool {
	_, _ = windows.WaitForSingleObject(g.process, windows.INFINITE)
	return false
}

// interrupt sends CTRL_BREAK to the child's process group. It fails when this process has no
// console to share with the child (e.g. started by a GUI MCP client); Run then kills at once.
func (g *jobGroup) interrupt() error {
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, g.pid); err != nil {
		return fmt.Errorf("ctrl-break process group %d: %w", g.pid, err)
	}
	return nil
}

// kill terminates every process in the job: the child and all its descendants.
func (g *jobGroup) kill() {
	if ev, err := windows.WaitForSingleObject(g.process, 0); err == nil && ev == uint32(windows.WAIT_TIMEOUT) {
		g.killed = true // the main process is still running: this kill is what ends it
	}
	_ = windows.TerminateJobObject(g.job, killExitCode)
}

func (g *jobGroup) close() {
	// KILL_ON_JOB_CLOSE: closing the last handle also ends anything still in the job.
	_ = windows.CloseHandle(g.job)
	_ = windows.CloseHandle(g.process)
}

func (g *jobGroup) exit(ps *os.ProcessState) sandbox.Exit {
	if ps == nil {
		return sandbox.Exit{Code: -1}
	}
	code := ps.ExitCode()
	if g.killed && code == killExitCode {
		return sandbox.Exit{Code: -1, Signal: "SIGKILL"}
	}
	return sandbox.Exit{Code: code}
}

// isBadFormat reports a file Windows cannot run as a program.
func isBadFormat(err error) bool { return errors.Is(err, windows.ERROR_BAD_EXE_FORMAT) }

// id is 0: the Job Object (KILL_ON_JOB_CLOSE, its only handle held by this process) already ends
// the whole tree when the server dies, so nothing is tracked for the lifeline.
func (g *jobGroup) id() int { return 0 }

// KillGroup does nothing on Windows: there are no process groups to track (see id).
func KillGroup(int) error { return nil }

// killTree is never reached on Windows (SweepOrphans finds no environments there).
func killTree(int, bool) error { return nil }
