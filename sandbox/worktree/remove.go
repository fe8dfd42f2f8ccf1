package worktree

import (
	"context"
	"errors"
	"fmt"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// removeRecorded is Remove's work on context.WithoutCancel(ctx) with CleanupTimeout; failure is
// a *CleanupError.
func (m *Manager) removeRecorded(ctx context.Context, path, commonDir, admin, entry string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	if err := m.removeEntry(ctx, commonDir, admin, entry); err != nil {
		return &CleanupError{Path: path, Err: err}
	}
	return nil
}

// removeEntry deletes entry/wt, the worktree's git dir admin (found by its gitdir file when
// the record has none: a worktree whose creation failed half-way, or a crashed server's) and
// entry itself.
func (m *Manager) removeEntry(ctx context.Context, commonDir, admin, entry string) error {
	unlock, err := m.lock(ctx, commonDir)
	if err != nil {
		return err
	}
	defer unlock()
	wt := filepath.Join(entry, "wt")
	var errs []error
	if err := removeTree(wt); err != nil {
		errs = append(errs, err)
	}
	if admin == "" {
		admin = findAdmin(commonDir, wt)
	}
	if admin != "" {
		if err := removeAdmin(commonDir, admin); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeTree(entry); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeAdmin deletes a worktree's git dir, but only a real directory directly inside
// <commonDir>/worktrees.
func removeAdmin(commonDir, admin string) error {
	if filepath.Dir(admin) != filepath.Join(commonDir, "worktrees") {
		return fmt.Errorf("worktree git dir %s is not inside %s/worktrees; left alone", admin, commonDir)
	}
	fi, err := os.Lstat(admin)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("worktree git dir %s is not a directory; left alone", admin)
	}
	return removeTree(admin)
}

// findAdmin returns the git dir under <commonDir>/worktrees whose gitdir file names wt/.git
// exactly, or "".
func findAdmin(commonDir, wt string) string {
	dir := filepath.Join(commonDir, "worktrees")
	list, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	want := filepath.Join(wt, ".git")
	for _, de := range list {
		if !de.IsDir() {
			continue
		}
		b, err := git.ReadSmall(filepath.Join(dir, de.Name(), "gitdir"))
		if err == nil && filepath.Clean(strings.TrimSpace(string(b))) == want {
			return filepath.Join(dir, de.Name())
		}
	}
	return ""
}

// removeTree deletes p and everything below it without following symlinks (os.RemoveAll
// unlinks a link, never its target). Directories a run made unwritable are opened up first.
func removeTree(p string) error {
	if err := os.RemoveAll(p); err == nil {
		return nil
	}
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() { // a symlink is never IsDir here
			_ = os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}
