//go:build windows

package git

// openNonblock: Windows has no FIFOs in the file system to block on.
const openNonblock = 0
