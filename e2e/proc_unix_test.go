//go:build e2e && unix

package e2e

import "syscall"

// groupExists reports whether process group pg (not ours) still has a member.
func groupExists(pg int) bool {
	return pg > 1 && pg != syscall.Getpgrp() && syscall.Kill(-pg, 0) == nil
}
