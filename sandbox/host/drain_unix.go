//go:build unix

package host

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// drain delivers what is buffered in the pipe right now, without waiting for more: the
// deadline that interrupted the pump is lifted, and the raw non-blocking descriptor is read
// until EAGAIN, EOF or maxDrain bytes.
func drain(f *os.File, buf []byte, write func([]byte)) {
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for total := 0; total < maxDrain; {
			n, err := unix.Read(int(fd), buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n <= 0 {
				break
			}
			write(buf[:n])
			total += n
		}
		return true // never wait for readiness
	})
}
