//go:build windows

package worktree

import (
	"io/fs"
	"os"
)

// statEntries reads the type of every entry of the open directory f; Windows link counts are
// not read (1), and permission bits are not judged there (see shape).
func statEntries(f *os.File, list []fs.DirEntry) ([]entryInfo, error) {
	out := make([]entryInfo, len(list))
	for i, de := range list {
		fi, err := de.Info()
		if err != nil {
			return nil, err
		}
		out[i] = entryInfo{mode: fi.Mode(), links: 1}
	}
	return out, nil
}
