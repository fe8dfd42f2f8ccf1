package proc

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func startTime(pid int) (uint64, error) {
	// kern.proc.pid answers a vanished pid with an empty result (EIO from x/sys); signal 0 tells
	// "no such process" apart from other failures first.
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return 0, os.ErrNotExist
	}
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		if errors.Is(err, unix.EIO) || errors.Is(err, unix.ESRCH) {
			return 0, os.ErrNotExist
		}
		return 0, fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, err)
	}
	if kp.Proc.P_stat == 5 { // SZOMB: exited, not yet reaped
		return 0, os.ErrNotExist
	}
	tv := kp.Proc.P_starttime
	return uint64(tv.Sec)*1_000_000 + uint64(tv.Usec), nil
}
