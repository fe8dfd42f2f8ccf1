package netns

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Run calls f on an OS thread of its own that was moved into a new network namespace with
// loopback up. Sockets f opens and processes f starts (exec from f's goroutine) belong to that
// namespace; goroutines f starts do not, but sockets keep their namespace wherever they are
// used. The thread is never returned to the Go scheduler: it ends with f. A process f starts
// with Pdeathsig would be signalled then, so f should wait for what it starts.
func Run(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime discards the thread when this goroutine ends
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare CLONE_NEWNET (needs root or CAP_SYS_ADMIN): %w", err)
			return
		}
		if err := LoopbackUp(); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// LoopbackUp sets IFF_UP on lo of the calling thread's network namespace, what
// `ip link set lo up` does.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS lo: %w", err)
	}
	return nil
}
