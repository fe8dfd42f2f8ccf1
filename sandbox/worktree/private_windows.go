//go:build windows

package worktree

import (
	"io/fs"
)

// checkPrivate trusts the per-user temp dir Windows gives every account.
func checkPrivate(fi fs.FileInfo) error { return nil }

// openNonblock: Windows has no FIFOs in the file system to block on.
const openNonblock = 0
