//go:build e2e && unix

package e2e

import (
	"os"
	"syscall"
)

// fileUID is the owner of a file.
func fileUID(st os.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid)
	}
	return -1
}

// groupExists reports whether process group pg (not ours) still has a member.
func groupExists(pg int) bool {
	return pg > 1 && pg != syscall.Getpgrp() && syscall.Kill(-pg, 0) == nil
}
