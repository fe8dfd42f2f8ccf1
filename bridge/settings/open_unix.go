//go:build unix

package settings

import "syscall"

// openNonblock keeps opening a file the container may have replaced by a FIFO from blocking.
const openNonblock = syscall.O_NONBLOCK
