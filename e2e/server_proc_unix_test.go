//go:build unix

package e2e

import (
	"os"
	"syscall"
)

// killGroup SIGKILLs process group pg unless it is ours or not a real group.
func killGroup(pg int) {
	if pg > 1 && pg != syscall.Getpgrp() {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
}

// alive reports whether pid still exists (zombies of other parents count as gone here only
// when reaped, which init does quickly).
func alive(pid int) bool { return pid > 1 && syscall.Kill(pid, 0) == nil }

// fileUID is the owner of a file.
func fileUID(st os.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid)
	}
	return -1
}

// groupAlive reports whether process group pg still has a member.
func groupAlive(pg int) bool { return pg > 1 && pg != syscall.Getpgrp() && syscall.Kill(-pg, 0) == nil }
