//go:build !linux && !windows

package worktree

// processStartTime is unknown here; Sweep then trusts any live pid.
func processStartTime(pid int) (uint64, bool) { return 0, false }
