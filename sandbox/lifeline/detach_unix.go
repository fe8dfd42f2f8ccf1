//go:build unix

package lifeline

import (
	"os/exec"
	"syscall"
)

// detach puts the watchdog into its own session: no controlling terminal, no share of the
// server's process group, so signals meant for the server do not reach it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
