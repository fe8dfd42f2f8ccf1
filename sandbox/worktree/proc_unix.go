//go:build unix

package worktree

import (
	"errors"
	"io/fs"
	"syscall"
)

// processAlive reports whether pid exists (signal 0; EPERM means it exists under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// checkPrivate refuses a root that another user owns or others can write to.
func checkPrivate(root string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != syscall.Getuid() {
		return errors.New("worktree root " + root + ": owned by another user")
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return errors.New("worktree root " + root + ": writable by group or others")
	}
	return nil
}
