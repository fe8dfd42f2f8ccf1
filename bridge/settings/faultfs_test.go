package settings

import (
	"os"
	"sync"

	"github.com/spf13/afero"
)

// faultFS wraps a filesystem and fails chosen operations, the way a full disk or a flaky mount would.
type faultFS struct {
	afero.Fs
	mu        sync.Mutex
	openErr   map[string]error // Open/OpenFile of this exact path for reading
	writeErr  error            // Write on any file opened for writing
	syncErr   error            // Sync on any file opened for writing
	renameErr error
	renames   int
	// onRead, when set, runs before each open of a path for reading (n counts those opens of
	// name, from 1), outside the lock: it may change the file, the way another writer would.
	onRead func(name string, n int)
	reads  map[string]int
}

func newFaultFS(fs afero.Fs) *faultFS { return &faultFS{Fs: fs, openErr: map[string]error{}} }

func (f *faultFS) set(fn func(f *faultFS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faultFS) Open(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	writing := flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE) != 0
	f.mu.Lock()
	err := f.openErr[name]
	hook := f.onRead
	if f.reads == nil {
		f.reads = map[string]int{}
	}
	if !writing {
		f.reads[name]++
	}
	n := f.reads[name]
	f.mu.Unlock()
	if hook != nil && !writing {
		hook(name, n)
	}
	if err != nil && !writing {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	file, err := f.Fs.OpenFile(name, flag, perm)
	if err != nil || !writing {
		return file, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *faultFS) Rename(oldname, newname string) error {
	f.mu.Lock()
	err := f.renameErr
	f.renames++
	f.mu.Unlock()
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return f.Fs.Rename(oldname, newname)
}

type faultFile struct {
	afero.File
	fs *faultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	err := f.fs.writeErr
	f.fs.mu.Unlock()
	if err != nil {
		// A full disk writes part of the buffer before it gives up.
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	f.fs.mu.Lock()
	err := f.fs.syncErr
	f.fs.mu.Unlock()
	if err != nil {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return f.File.Sync()
}
