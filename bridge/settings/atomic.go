package settings

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// Windows error numbers that mean "someone (an antivirus, an indexer, another Cline) has the file open right now".
const (
	winErrorAccessDenied     = syscall.Errno(5)
	winErrorSharingViolation = syscall.Errno(32)
)

// renameAttempts bounds the Windows retry; with the backoff below the last try happens ~1.3 s after the first.
const renameAttempts = 8

func renameBackoff(attempt int) time.Duration {
	return min(10*time.Millisecond<<attempt, 400*time.Millisecond)
}

// writeAtomic replaces path with data: a 0600 temp file in the same directory, fsync, rename over the original.
// A reader sees the old bytes or the new ones, never a mix. check, when not nil, runs once the new file is
// durable, right before the rename; an error from it aborts the write. On any error the original is untouched
// and the temp file is gone. Errors are the *PathError/*LinkError of the step that failed (they name the op
// and the file), or check's.
func (s *Store) writeAtomic(path string, data []byte, check func() error) (err error) {
	dir := filepath.Dir(path)
	if err := s.FS.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := afero.TempFile(s.FS, dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = s.FS.Remove(tmp)
		}
	}()
	if err := s.FS.Chmod(tmp, 0o600); err != nil { // TempFile asks for 0600; make it explicit whatever the umask
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if err := s.rename(tmp, path); err != nil {
		return err
	}
	s.syncDir(dir)
	return nil
}

// rename moves tmp over path. On Windows a file that another process holds open refuses to be replaced for a
// moment (EPERM/EBUSY, ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION), so retry a few times with backoff.
func (s *Store) rename(tmp, path string) error {
	rename := s.Rename
	if rename == nil {
		rename = s.FS.Rename
	}
	sleep := s.sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	var err error
	for attempt := range renameAttempts {
		if err = rename(tmp, path); err == nil {
			return nil
		}
		if s.goos() != "windows" || !retryableRename(err) {
			break
		}
		if attempt < renameAttempts-1 {
			sleep(renameBackoff(attempt))
		}
	}
	if s.goos() == "windows" && retryableRename(err) {
		return fmt.Errorf("gave up after %d attempts: %w", renameAttempts, err)
	}
	return err
}

func retryableRename(err error) bool {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EPERM, syscall.EBUSY, winErrorAccessDenied, winErrorSharingViolation:
			return true
		}
	}
	return errors.Is(err, fs.ErrPermission)
}

// syncDir makes the rename durable on POSIX systems; best effort (not every filesystem lets a dir be synced).
func (s *Store) syncDir(dir string) {
	if s.goos() == "windows" {
		return
	}
	d, err := s.FS.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

func (s *Store) goos() string {
	if s.GOOS != "" {
		return s.GOOS
	}
	return runtimeGOOS
}

// readFile reads path with a size cap; a settings file bigger than this is not something we should rewrite.
func (s *Store) readFile(path string) ([]byte, error) {
	f, err := s.FS.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("read %s: over the %d byte limit", path, maxFileSize)
	}
	return data, nil
}
