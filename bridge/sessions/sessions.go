// Package sessions keeps the conversations of the ACP engine between calls and across server
// restarts: one record per session (which tool, isolation and checkout it belongs to, its
// provider and model, where the CLI keeps its history), stored as one 0600 JSON file per session in
// a 0700 directory, written atomically. A session expires after an idle time; Expire hands the
// expired records to the caller, which releases what they hold (a worktree, a data dir).
//
// The store holds no secret: no answer, no credential — ids, paths, names and a title (the first
// line of the first prompt, redacted by the caller). Every id is validated before it names a file.
package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Record is one session.
type Record struct {
	// ID is the CLI's session id (session/new's sessionId): the handle of session/load.
	ID        string `json:"sessionId"`
	Tool      string `json:"tool"`
	Isolation string `json:"isolation"`
	// Cwd is the call's cwd; Dir is where the CLI ran (the worktree of ask_cline_workspace).
	Cwd string `json:"cwd"`
	Dir string `json:"dir,omitempty"`
	// Commit is the worktree's commit (ask_cline_workspace).
	Commit   string `json:"commit,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// DataDir is the host directory that keeps a container session's CLI data between calls
	// ("" on the host: the CLI keeps it in the user's data dir).
	DataDir  string    `json:"dataDir,omitempty"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"lastUsed"`
	Turns    int       `json:"turns"`
	// Title is the first line of the first prompt, short, for a listing.
	Title string `json:"title,omitempty"`
}

// ErrNotFound: no session with that id (never created, expired or removed).
var ErrNotFound = errors.New("no such session")

// IDPattern is the rule of a session id (in the tools' input schema too).
const IDPattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`

var validID = regexp.MustCompile(IDPattern)

// ValidID reports whether id can name a session (the CLI's ids look like 1796278600502_lmK-X_cli).
func ValidID(id string) bool { return validID.MatchString(id) && !strings.Contains(id, "..") }

// Store is the session records under Dir. It is safe for concurrent use within one process;
// records are small and written whole, so another server's writes are seen on the next read.
type Store struct {
	Dir string
	// Idle is how long a session lives without a turn (0: DefaultIdle).
	Idle time.Duration
	mu   sync.Mutex
}

// DefaultIdle is a session's idle lifetime when Store.Idle is zero.
const DefaultIdle = 24 * time.Hour

// maxRecord bounds a record file read from disk.
const maxRecord = 64 << 10

func (s *Store) idle() time.Duration {
	if s.Idle > 0 {
		return s.Idle
	}
	return DefaultIdle
}

func (s *Store) path(id string) string { return filepath.Join(s.Dir, id+".json") }

// Get returns the live session id. An expired one is ErrNotFound too (Expire removes it).
func (s *Store) Get(id string, now time.Time) (Record, error) {
	if !ValidID(id) {
		return Record{}, fmt.Errorf("%w: %q is not a session id", ErrNotFound, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.read(id)
	if err != nil {
		return Record{}, err
	}
	if now.Sub(r.LastUsed) > s.idle() {
		return Record{}, fmt.Errorf("%w: session %s expired after %s without a turn", ErrNotFound, id, s.idle())
	}
	return r, nil
}

func (s *Store) read(id string) (Record, error) {
	f, err := os.Open(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Record{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxRecord {
		return Record{}, fmt.Errorf("session record %s is not a regular file of at most %d bytes", s.path(id), maxRecord)
	}
	var r Record
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		return Record{}, fmt.Errorf("session record %s: %w", s.path(id), err)
	}
	if r.ID != id {
		return Record{}, fmt.Errorf("session record %s names session %q", s.path(id), r.ID)
	}
	return r, nil
}

// Put writes r (atomically, 0600).
func (s *Store) Put(r Record) error {
	if !ValidID(r.ID) {
		return fmt.Errorf("session id %q is not valid", r.ID)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.Dir, ".tmp-"+r.ID+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), s.path(r.ID))
}

// Delete removes a record; a missing one is not an error.
func (s *Store) Delete(id string) error {
	if !ValidID(id) {
		return fmt.Errorf("session id %q is not valid", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// List returns the live sessions, most recently used first; unreadable records are skipped and
// named in the second result.
func (s *Store) List(now time.Time) ([]Record, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Record
	var bad []string
	for _, id := range s.ids() {
		r, err := s.read(id)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		if now.Sub(r.LastUsed) <= s.idle() {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, bad
}

// Expire removes the records idle longer than Idle and returns them, so the caller can release
// what they hold.
func (s *Store) Expire(now time.Time) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []Record
	for _, id := range s.ids() {
		r, err := s.read(id)
		if err != nil || now.Sub(r.LastUsed) <= s.idle() {
			continue
		}
		if os.Remove(s.path(id)) == nil {
			gone = append(gone, r)
		}
	}
	return gone
}

func (s *Store) ids() []string {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && e.Type().IsRegular() && ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids
}
