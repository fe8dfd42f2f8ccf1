//go:build windows

package settings

// openNonblock: Windows has no FIFOs in the file system to block on.
const openNonblock = 0
