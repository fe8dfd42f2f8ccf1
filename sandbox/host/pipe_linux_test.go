package host

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeBuffered is how many bytes wait unread in the pipe f is one end of.
func pipeBuffered(f *os.File) int {
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ) // TIOCINQ == FIONREAD
	if err != nil {
		return 0
	}
	return n
}
