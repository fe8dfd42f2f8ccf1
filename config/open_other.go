//go:build !unix

package config

import "os"

// openNonBlocking opens path for reading (Windows has no FIFOs that block an open).
func openNonBlocking(path string) (*os.File, error) {
	return os.Open(path)
}

// oNonBlock is 0 where an open never blocks on a FIFO.
const oNonBlock = 0
