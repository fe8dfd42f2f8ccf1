//go:build unix

package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// prepare puts the child into a new process group whose id is its pid, so that signals reach
// the child and every descendant that stays in the group (the npm wrapper's real binary too).
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

type pgroup struct {
	cmd  *exec.Cmd
	pgid int
}

func attach(cmd *exec.Cmd) (group, error) {
	return &pgroup{cmd: cmd, pgid: cmd.Process.Pid}, nil
}

// interrupt sends SIGINT to the group — once: a second SIGINT makes the real CLI exit 1 from
// its top-level handler. Only when the group is gone (the child moved itself elsewhere) is the
// child signalled directly.
func (g *pgroup) interrupt() error {
	err := unix.Kill(-g.pgid, unix.SIGINT)
	if errors.Is(err, unix.ESRCH) {
		err = g.cmd.Process.Signal(os.Interrupt)
		if errors.Is(err, os.ErrProcessDone) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("interrupt process group %d: %w", g.pgid, err)
	}
	return nil
}

// kill sends SIGKILL to the whole group, and to the child itself in case it left the group
// (os.Process knows when it was reaped, so this never hits a recycled pid). Idempotent;
// "nobody left" is success.
func (g *pgroup) kill() {
	_ = unix.Kill(-g.pgid, unix.SIGKILL)
	_ = g.cmd.Process.Kill()
}

func (g *pgroup) close() {}

func (g *pgroup) id() int { return g.pgid }

// KillGroup sends SIGKILL to process group pgid (never to ours, never to a pid <= 1). The
// lifeline's watchdog calls it for the runs of a server that died.
func KillGroup(pgid int) error {
	if pgid <= 1 || pgid == unix.Getpgrp() {
		return fmt.Errorf("kill process group %d: refused", pgid)
	}
	if err := unix.Kill(-pgid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	return nil
}

func (g *pgroup) exit(ps *os.ProcessState) sandbox.Exit {
	if ps == nil {
		return sandbox.Exit{Code: -1}
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return sandbox.Exit{Code: ps.ExitCode()}
	}
	name := unix.SignalName(ws.Signal())
	if name == "" {
		name = fmt.Sprintf("signal %d", int(ws.Signal()))
	}
	return sandbox.Exit{Code: -1, Signal: name}
}

// isBadFormat reports an exec format error (a file the kernel cannot run).
func isBadFormat(err error) bool { return errors.Is(err, syscall.ENOEXEC) }

// killTree sends SIGKILL to pid and, with group, to its whole process group when pid leads
// that group (as every run's process does, see prepare) and it is not ours. The group of a
// process that does not lead one — a shell script's, a CI job's — belongs to somebody else.
func killTree(pid int, group bool) error {
	if pgid, err := unix.Getpgid(pid); group && err == nil && pgid == pid && pgid > 1 && pgid != unix.Getpgrp() {
		_ = unix.Kill(-pgid, unix.SIGKILL)
	}
	if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	return nil
}
