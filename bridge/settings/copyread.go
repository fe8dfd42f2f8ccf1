package settings

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/afero"
)

// errCopyFile is a settings copy that is not a plain regular file.
var errCopyFile = errors.New("not a regular file")

// read returns the run's providers.json from the copy. Every path component below Dir is checked with
// Lstat first: a symlink anywhere (settings/ or providers.json), a FIFO, a socket or a device is
// refused, and so is a file over maxFileSize. On the real file system the read goes through an
// os.Root at Dir, opened without blocking, and must be the very file that was checked.
func (c *Copy) read() ([]byte, error) {
	rel := []string{filepath.Base(filepath.Dir(c.SettingsPath)), filepath.Base(c.SettingsPath)}
	if _, ok := c.fs.(*afero.OsFs); !ok {
		return c.readFS(rel)
	}
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	dir, err := root.Lstat(rel[0])
	if err != nil {
		return nil, err
	}
	if !dir.IsDir() {
		return nil, fmt.Errorf("%s: %w (the settings dir was replaced)", rel[0], errCopyFile)
	}
	name := filepath.Join(rel...)
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if err := checkCopyFile(name, fi); err != nil {
		return nil, err
	}
	f, err := root.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !os.SameFile(fi, now) {
		return nil, fmt.Errorf("%s: replaced while it was opened", name)
	}
	return readCapped(f, name)
}

// readFS is read for other afero file systems (tests): the same checks without os.Root.
func (c *Copy) readFS(rel []string) ([]byte, error) {
	lstat := func(p string) (fs.FileInfo, error) {
		if l, ok := c.fs.(afero.Lstater); ok {
			fi, _, err := l.LstatIfPossible(p)
			return fi, err
		}
		return c.fs.Stat(p)
	}
	dir, err := lstat(filepath.Join(c.Dir, rel[0]))
	if err != nil {
		return nil, err
	}
	if !dir.IsDir() {
		return nil, fmt.Errorf("%s: %w (the settings dir was replaced)", rel[0], errCopyFile)
	}
	fi, err := lstat(c.SettingsPath)
	if err != nil {
		return nil, err
	}
	if err := checkCopyFile(filepath.Join(rel...), fi); err != nil {
		return nil, err
	}
	f, err := c.fs.Open(c.SettingsPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f, filepath.Join(rel...))
}

func checkCopyFile(name string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		kind := "a " + fi.Mode().Type().String()
		if fi.Mode()&fs.ModeSymlink != 0 {
			kind = "a symlink"
		} else if fi.Mode()&fs.ModeNamedPipe != 0 {
			kind = "a FIFO"
		}
		return fmt.Errorf("%s: %w (%s)", name, errCopyFile, kind)
	}
	if fi.Size() > maxFileSize {
		return fmt.Errorf("%s: over the %d byte limit", name, maxFileSize)
	}
	return nil
}

func readCapped(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("read %s: over the %d byte limit", name, maxFileSize)
	}
	return data, nil
}
