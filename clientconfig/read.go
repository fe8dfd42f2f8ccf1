package clientconfig

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// MaxFileBytes bounds a client configuration file Merge reads (Claude Code's ~/.claude.json
// holds its project history too, and grows to a few MB).
const MaxFileBytes = 32 << 20

// readFile reads the client configuration file at path for a merge. A symlink is followed
// (a user's dotfiles are often links into a repository, and the user named the file); the file
// it ends at must be a regular file no larger than MaxFileBytes: a FIFO, device, socket or
// directory is refused before it is opened, the open never blocks, and a file swapped between
// the check and the open is refused too. It returns the resolved path (the one to replace), the
// content (nil when there is no file yet) and the file's permissions.
func readFile(path string) (resolved string, content []byte, mode fs.FileMode, err error) {
	resolved, mode = path, 0o600
	if r, err := filepath.EvalSymlinks(path); err == nil {
		resolved = r
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	fi, err := os.Lstat(resolved)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return resolved, nil, mode, nil
	case err != nil:
		return "", nil, 0, err
	case !fi.Mode().IsRegular():
		return "", nil, 0, fmt.Errorf("%s is %s, not a regular file: refusing to read or replace it", path, fileKind(fi.Mode()))
	case fi.Size() > MaxFileBytes:
		return "", nil, 0, fmt.Errorf("%s is larger than %d MiB: refusing to read it", path, MaxFileBytes>>20)
	}
	f, err := git.OpenRegular(resolved, MaxFileBytes)
	if err != nil {
		return "", nil, 0, err
	}
	defer f.Close()
	content, err = io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return "", nil, 0, err
	}
	if len(content) > MaxFileBytes {
		return "", nil, 0, fmt.Errorf("%s grew past %d MiB while it was read: refusing it", path, MaxFileBytes>>20)
	}
	return resolved, content, fi.Mode().Perm(), nil
}

// fileKind names a file type for an error message.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink that cannot be resolved"
	}
	return "not a regular file (" + m.Type().String() + ")"
}
