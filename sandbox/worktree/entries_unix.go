//go:build unix

package worktree

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// statEntries reads the type, mode and link count of every entry of the open directory f with
// fstatat relative to f (never following a symlink, never resolving the path again).
func statEntries(f *os.File, list []fs.DirEntry) ([]entryInfo, error) {
	out := make([]entryInfo, len(list))
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		for i, de := range list {
			if serr = unix.Fstatat(int(fd), de.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil {
				serr = &fs.PathError{Op: "fstatat", Path: de.Name(), Err: serr}
				return
			}
			out[i] = entryInfo{mode: fileMode(uint32(st.Mode)), links: uint64(st.Nlink)}
		}
	})
	if err == nil {
		err = serr
	}
	return out, err
}

// fileMode converts a stat mode as os.Lstat does.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFREG:
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	default:
		mode |= fs.ModeIrregular
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
