//go:build unix

package worktree

import (
	"fmt"
	"io/fs"
	"syscall"
)

// checkPrivate refuses a directory that another user owns or that others may enter: worktrees
// hold the user's source code, and whoever can write the root could plant entries the sweeper
// would act on.
func checkPrivate(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != syscall.Getuid() {
		return fmt.Errorf("owned by uid %d, not by this user (uid %d)", st.Uid, syscall.Getuid())
	}
	if fi.Mode().Perm() != 0o700 {
		return fmt.Errorf("mode %v, want 0700", fi.Mode().Perm())
	}
	return nil
}

// openNonblock keeps an open of a file a run may have replaced by a FIFO from blocking.
const openNonblock = syscall.O_NONBLOCK
