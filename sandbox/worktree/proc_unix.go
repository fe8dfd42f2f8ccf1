//go:build unix

package worktree

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// processAlive reports whether pid exists (signal 0; EPERM means it exists under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// checkPrivate refuses a root that another user owns, and makes one of ours 0700 again if
// someone widened it, because worktrees hold the user's source code.
func checkPrivate(root string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != syscall.Getuid() {
		return errors.New("worktree root " + root + ": owned by another user")
	}
	if fi.Mode().Perm() != 0o700 {
		return os.Chmod(root, 0o700)
	}
	return nil
}
