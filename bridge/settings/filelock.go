package settings

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// fileLockWait bounds the wait for another cline-mcp process's write of the same file. A holder
// keeps the lock for one read-modify-write (milliseconds); a lock held longer belongs to a process
// that is stuck, and waiting on it forever would hang the call's cleanup.
const fileLockWait = 30 * time.Second

// fileLockPoll is how often a waiter tries the lock again.
const fileLockPoll = 5 * time.Millisecond

// LockPath is the advisory lock file that orders the writes of providers.json by every cline-mcp
// process of the user: providers.json.lock beside it. Every process that uses the same
// providers.json derives the same name; the file is created on first use (0600) and never
// removed (removing a lock file races with a process about to lock it). The Cline CLI does not
// take it: its own writes (a token refresh at run start) are atomic renames that this lock cannot
// order, which is why every holder re-reads the file after locking and writes only its own
// fields.
func LockPath(providers string) string { return providers + ".lock" }

// updateAttempts bounds how often update redoes a read-modify-write because the file changed between
// its read and its rename (the Cline CLI writes without our lock).
const updateAttempts = 5

// errChanged aborts a write whose file changed after it was read.
var errChanged = errors.New("changed while it was being updated")

// update is one read-modify-write of s.Path under exclusive. fn gets the file's bytes as read now (err is
// the read's error, fs.ErrNotExist for no file) and returns the bytes to write (nil: no write) and its
// warnings. The new file replaces the old one only if the old one still holds exactly what fn saw once the
// new one is ready; otherwise fn runs again on the newer bytes, so a write that landed meanwhile — another
// process's merge, a token refresh by a running CLI — is never overwritten by a stale copy. What the lock
// cannot close is the instant between that check and the rename. A write that fails adds a warning that
// ends in consequence.
func (s *Store) update(ctx context.Context, consequence string, fn func(cur []byte, err error) ([]byte, []string)) []string {
	return s.exclusive(ctx, consequence, func() []string {
		for attempt := 1; ; attempt++ {
			cur, rerr := s.readFile(s.Path)
			next, warns := fn(cur, rerr)
			if next == nil {
				return warns
			}
			existed := rerr == nil
			err := s.writeAtomic(s.Path, next, func() error {
				now, err := s.readFile(s.Path)
				if existed != (err == nil) || (existed && !bytes.Equal(now, cur)) || (err != nil && !errors.Is(err, fs.ErrNotExist)) {
					return fmt.Errorf("%s %w", s.Path, errChanged)
				}
				return nil
			})
			if errors.Is(err, errChanged) && attempt < updateAttempts {
				continue
			}
			if err != nil {
				return append(warns, fmt.Sprintf("settings: could not write %s (%v); %s", s.Path, errText(err), consequence))
			}
			return warns
		}
	})
}

// exclusive runs fn — one read-modify-write of s.Path — while holding the Store's mutex (other
// calls of this process) and, when s.LockPath is set, an exclusive advisory lock on that file
// (flock on Unix, LockFileEx on Windows; other cline-mcp processes). fn must read the file after
// exclusive called it, never before. If the lock cannot be taken in fileLockWait, fn does not run
// and the warning says so, ending in consequence.
func (s *Store) exclusive(ctx context.Context, consequence string, fn func() []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.LockPath == "" {
		return fn()
	}
	unlock, err := lockFile(ctx, s.LockPath, fileLockWait)
	if err != nil {
		return []string{fmt.Sprintf("settings: could not take %s, the lock that orders cline-mcp's writes of %s across processes (%v); nothing was written, so %s", s.LockPath, s.Path, errText(err), consequence)}
	}
	defer unlock()
	return fn()
}

// lockFile takes an exclusive lock on path (creating it and its directory, 0700, when missing)
// within wait and before ctx ends, and returns the function that releases it.
func lockFile(ctx context.Context, path string, wait time.Duration) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	fl := flock.New(path, flock.SetPermissions(0o600))
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	ok, err := fl.TryLockContext(lctx, fileLockPoll)
	if err != nil || !ok {
		_ = fl.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lock %s: gave up waiting (%w)", path, ctx.Err())
		}
		if err == nil || lctx.Err() != nil {
			return nil, fmt.Errorf("lock %s: another process held it for %v", path, wait)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = fl.Unlock() }, nil
}
