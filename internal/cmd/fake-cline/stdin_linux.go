package main

import (
	"os"
	"syscall"
	"unsafe"
)

// stdinKind classifies fd 0 for RECORD and decides whether it is read (pipe and file are read to
// EOF like the real CLI; /dev/null and other character devices are not).
func stdinKind() string {
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return "closed"
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return "pipe"
	case syscall.S_IFREG:
		return "file"
	case syscall.S_IFSOCK:
		return "socket"
	case syscall.S_IFCHR:
		if isTTY(0) {
			return "tty"
		}
		var null syscall.Stat_t
		if err := syscall.Stat(os.DevNull, &null); err == nil && null.Rdev == st.Rdev {
			return "devnull"
		}
		if st.Rdev == 0x103 { // major 1, minor 3: /dev/null even when /dev is missing
			return "devnull"
		}
		return "chardev"
	}
	return "other"
}

func isTTY(fd uintptr) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
