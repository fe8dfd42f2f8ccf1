// Package store keeps records on disk: one JSON file per record, <id>.json, 0600, in a 0700
// directory. A record is written whole and atomically (a temporary file in the same directory,
// synced, then renamed over the old one), so a reader — in this process or another server sharing
// the directory — sees the old record or the new one, never a mix; a writer that crashes leaves
// only a temporary file, which readers ignore and Expire removes. A Store serializes its own
// reads, writes and removals (one mutex), so a check-then-remove in Expire is atomic within the
// process; between processes, a removal is claimed once (only the remove that succeeds returns
// the record).
//
// The directory is treated as hostile: records may live where a container session can write. An
// id names a file only after it matches IDPattern (and the caller's narrower rule); every file is
// reached through an os.Root at the directory, never through a symbolic link, opened without
// blocking (a FIFO would hang the call), read only when it is a regular file — the same one that
// was checked — and at most Max bytes.
//
// It imports nothing of ours: bridge/jobs and bridge/sessions keep only what is theirs on top.
package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// IDPattern is the widest rule of a record id; a Store's Valid may narrow it. Together with the
// ban on ".." it keeps an id a plain file name: no separator, no leading dot, no traversal.
const IDPattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`

var idRule = regexp.MustCompile(IDPattern)

// ValidID reports whether id matches IDPattern and holds no "..".
func ValidID(id string) bool { return idRule.MatchString(id) && !strings.Contains(id, "..") }

// ErrNotFound: no record with that id.
var ErrNotFound = errors.New("no such record")

// DefaultMax bounds a record file when Store.Max is zero.
const DefaultMax = 1 << 20

// TempGrace is how old a temporary file must be before Expire takes it for a crashed writer's
// leftover (a write takes milliseconds; a live writer's file is never removed under it).
const TempGrace = 10 * time.Minute

const (
	suffix    = ".json"
	tmpPrefix = ".tmp-"
)

// Store is the records of type T under Dir. Set the fields before first use; the zero mutex is
// ready. A Store is safe for concurrent use.
type Store[T any] struct {
	Dir string
	// Kind names a record in errors ("job", "session").
	Kind string
	// ID is a record's own id: a file whose record names another id is refused.
	ID func(T) string
	// Valid, if set, narrows IDPattern.
	Valid func(id string) bool
	// Time is a record's last change: List orders by it, newest first, and Expire ages by it.
	Time func(T) time.Time
	// Max bounds a record file (0: DefaultMax).
	Max int64

	mu sync.Mutex
}

// ValidID reports whether id may name a record of this store.
func (s *Store[T]) ValidID(id string) bool {
	return ValidID(id) && (s.Valid == nil || s.Valid(id))
}

func (s *Store[T]) max() int64 {
	if s.Max > 0 {
		return s.Max
	}
	return DefaultMax
}

func (s *Store[T]) path(id string) string { return filepath.Join(s.Dir, id+suffix) }

// root opens Dir; a missing directory is (nil, nil): it holds no record.
func (s *Store[T]) root() (*os.Root, error) {
	r, err := os.OpenRoot(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return r, err
}

// Get reads the record id. A missing one is ErrNotFound; an invalid id is ErrNotFound too.
func (s *Store[T]) Get(id string) (T, error) {
	var zero T
	if !s.ValidID(id) {
		return zero, fmt.Errorf("%w: %q is not a %s id", ErrNotFound, id, s.Kind)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	root, err := s.root()
	if err != nil || root == nil {
		return zero, s.missing(id, err)
	}
	defer root.Close()
	return s.read(root, id)
}

func (s *Store[T]) missing(id string, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: %s %s", ErrNotFound, s.Kind, id)
}

// errReplaced is readOnce's word for a record renamed over between its Lstat and its open: a
// writer's atomic replace, which a new look resolves (a planted link or FIFO keeps failing).
var errReplaced = errors.New("replaced while it was opened")

// read reads the record id, looking again when a writer replaced it while it was being opened.
func (s *Store[T]) read(root *os.Root, id string) (T, error) {
	for try := 0; ; try++ {
		v, err := s.readOnce(root, id)
		if !errors.Is(err, errReplaced) || try == 4 {
			return v, err
		}
	}
}

func (s *Store[T]) readOnce(root *os.Root, id string) (T, error) {
	var zero T
	name := id + suffix
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return zero, s.missing(id, nil)
	}
	if err != nil {
		return zero, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > s.max() {
		return zero, fmt.Errorf("%s record %s is not a regular file of at most %d bytes (%v)", s.Kind, s.path(id), s.max(), fi.Mode().Type())
	}
	// os.Root follows a link that stays inside Dir even under O_NOFOLLOW, so the Lstat above and
	// the same-file check below are what refuse one (or anything swapped in between); O_NONBLOCK
	// keeps a FIFO swapped in from hanging the open.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !now.Mode().IsRegular() || !os.SameFile(fi, now) {
		return zero, fmt.Errorf("%s record %s: %w", s.Kind, s.path(id), errReplaced)
	}
	b, err := io.ReadAll(io.LimitReader(f, s.max()+1))
	if err != nil {
		return zero, err
	}
	if int64(len(b)) > s.max() {
		return zero, fmt.Errorf("%s record %s is larger than %d bytes", s.Kind, s.path(id), s.max())
	}
	var r T
	if err := json.Unmarshal(b, &r); err != nil {
		return zero, fmt.Errorf("%s record %s: %w", s.Kind, s.path(id), err)
	}
	if got := s.ID(r); got != id {
		return zero, fmt.Errorf("%s record %s names %s %q", s.Kind, s.path(id), s.Kind, got)
	}
	return r, nil
}

// Put writes r atomically (0600), replacing the record of the same id.
func (s *Store[T]) Put(r T) error {
	id := s.ID(r)
	if !s.ValidID(id) {
		return fmt.Errorf("%s id %q is not valid", s.Kind, id)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := writeAtomic(root, id+suffix, tmpPrefix+id+"-"+random(), b); err != nil {
		return fmt.Errorf("write %s record %s: %w", s.Kind, s.path(id), err)
	}
	return nil
}

// writeAtomic writes b to tmp (new, 0600, synced) and renames it to name; on any failure tmp goes.
func writeAtomic(root *os.Root, name, tmp string, b []byte) (err error) {
	// O_EXCL: os.Root never follows a link planted under the temporary name.
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o600) // the umask may only have narrowed it; say it exactly
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		return err
	}
	// The rename is durable once the directory is synced; a platform that cannot sync a
	// directory (Windows) still has the whole record or the old one.
	if d, err := root.Open("."); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Delete removes the record id; a missing one is not an error.
func (s *Store[T]) Delete(id string) error {
	if !s.ValidID(id) {
		return fmt.Errorf("%s id %q is not valid", s.Kind, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	root, err := s.root()
	if err != nil || root == nil {
		return err
	}
	defer root.Close()
	if err := root.Remove(id + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// List returns every record, newest first by Time (then by id); a file that cannot be read as a
// record (corrupt, too large, not a regular file, naming another id) is skipped and described in
// the second result. Temporary files are not records.
func (s *Store[T]) List() ([]T, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	root, err := s.root()
	if err != nil || root == nil {
		return nil, errs(err)
	}
	defer root.Close()
	ids, err := s.ids(root)
	var out []T
	bad := errs(err)
	for _, id := range ids {
		r, err := s.read(root, id)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b T) int {
		if s.Time != nil {
			if c := s.Time(b).Compare(s.Time(a)); c != 0 {
				return c
			}
		}
		return strings.Compare(s.ID(a), s.ID(b))
	})
	return out, bad
}

func errs(err error) []string {
	if err == nil {
		return nil
	}
	return []string{err.Error()}
}

// Expire removes the records whose Time is more than age before now, except those exempt says
// to keep (nil: none), and returns them so the caller can release what they hold. It also removes
// temporary files older than TempGrace: what a crashed writer left.
func (s *Store[T]) Expire(now time.Time, age time.Duration, exempt func(T) bool) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	root, err := s.root()
	if err != nil || root == nil {
		return nil
	}
	defer root.Close()
	s.removeTemps(root, now)
	ids, _ := s.ids(root)
	var gone []T
	for _, id := range ids {
		r, err := s.read(root, id)
		if err != nil || now.Sub(s.Time(r)) <= age || (exempt != nil && exempt(r)) {
			continue
		}
		if root.Remove(id+suffix) == nil {
			gone = append(gone, r)
		}
	}
	return gone
}

func (s *Store[T]) removeTemps(root *os.Root, now time.Time) {
	ents, err := readDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		// Lstat: the entry itself; Remove never follows a link either.
		if fi, err := root.Lstat(e.Name()); err == nil && now.Sub(fi.ModTime()) > TempGrace {
			_ = root.Remove(e.Name())
		}
	}
}

// ids are the names <id>.json with a valid id, whatever their type (read refuses what is not a
// regular file, so a planted one is reported, not skipped in silence).
func (s *Store[T]) ids(root *os.Root) ([]string, error) {
	ents, err := readDir(root)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), suffix); ok && s.ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func readDir(root *os.Root) ([]fs.DirEntry, error) {
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

func random() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
