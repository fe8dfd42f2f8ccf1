//go:build unix

package git

import "syscall"

// openNonblock keeps an open of a file a run may have replaced by a FIFO from blocking.
const openNonblock = syscall.O_NONBLOCK
