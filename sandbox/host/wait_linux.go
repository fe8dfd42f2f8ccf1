package host

import (
	"errors"

	"golang.org/x/sys/unix"
)

// awaitExit waits with WNOWAIT: the main process stays a zombie until cmd.Wait, which keeps
// its pid — the process group id — from being reused before the final group kill.
func (g *pgroup) awaitExit() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, g.pgid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				// Cannot peek (should not happen for our own child): reap instead.
				_ = g.cmd.Wait()
				return true
			}
			return false
		}
	}
}
