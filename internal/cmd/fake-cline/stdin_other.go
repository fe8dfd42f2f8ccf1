//go:build !linux

package main

import (
	"io/fs"
	"os"
)

// stdinKind classifies fd 0 for RECORD and decides whether it is read (pipe and file are read to
// EOF like the real CLI; /dev/null and other character devices are not). Outside Linux it judges
// from os.File.Stat, which is all the portable API offers.
func stdinKind() string {
	st, err := os.Stdin.Stat()
	if err != nil {
		return "closed"
	}
	switch m := st.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		return "pipe"
	case m.IsRegular():
		return "file"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0 || m&fs.ModeDevice != 0:
		if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(st, null) {
			return "devnull"
		}
		return "chardev"
	}
	return "other"
}
