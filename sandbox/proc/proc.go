// Package proc tells one process from another across pid reuse: a pid together with the
// process's start time names exactly one process for the life of the machine. Sweepers use it to
// decide that the server instance owning a leftover (a worktree, a container, a process) is
// gone. It works on Linux (/proc), macOS (sysctl kern.proc.pid) and Windows (GetProcessTimes);
// elsewhere StartTime reports ErrUnsupported and callers must treat the owner as alive.
package proc

import (
	"errors"
	"os"
)

// ErrUnsupported means this platform cannot tell a process's start time.
var ErrUnsupported = errors.New("process start time: not supported on this platform")

// StartTime is the start time of process pid in a platform-specific unit (clock ticks since
// boot on Linux, microseconds since the epoch on macOS, 100 ns units since 1601 on Windows). It
// is never 0 for a real process. The error wraps os.ErrNotExist when no such process exists or
// it is a zombie (exited, waiting for its parent to reap it: it runs no more).
// Compare values only with values from the same machine.
func StartTime(pid int) (uint64, error) {
	if pid <= 0 {
		return 0, os.ErrNotExist
	}
	return startTime(pid)
}

// Gone reports whether the process pid that started at start provably no longer runs: no such
// pid, or the pid now belongs to a process with another start time. Anything it cannot judge
// (start 0, an unsupported platform, a permission error) counts as still running, so a sweeper
// never removes what a live process owns.
func Gone(pid int, start uint64) bool {
	if pid <= 0 || start == 0 {
		return false
	}
	now, err := StartTime(pid)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true
	case err != nil:
		return false
	}
	return now != start
}
