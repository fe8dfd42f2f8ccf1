package lifeline

import (
	"os/exec"
	"syscall"
)

// detach starts the watchdog in its own process group, so a console Ctrl-C or Ctrl-Break meant
// for the server does not reach it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
