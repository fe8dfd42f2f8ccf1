// Package sessions keeps the conversations of the ACP engine between calls and across server
// restarts: one record per session (which tool, isolation and checkout it belongs to, its
// provider and model, where the CLI keeps its history), kept by bridge/store: one 0600 JSON file
// per session in a 0700 directory, written atomically, read without following a link. A session
// expires after an idle time; Expire hands the expired records to the caller, which releases what
// they hold (a worktree, a data dir).
//
// The store holds no secret: no answer, no credential — ids, paths, names and a title (the first
// line of the first prompt, redacted by the caller). Every id is validated before it names a file.
package sessions

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/store"
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
const IDPattern = store.IDPattern

// ValidID reports whether id can name a session (the CLI's ids look like 1796278600502_lmK-X_cli).
func ValidID(id string) bool { return store.ValidID(id) }

// Store is the session records under Dir. It is safe for concurrent use within one process;
// records are small and written whole, so another server's writes are seen on the next read.
type Store struct {
	Dir string
	// Idle is how long a session lives without a turn (0: DefaultIdle).
	Idle time.Duration

	once sync.Once
	st   store.Store[Record]
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

func (s *Store) recs() *store.Store[Record] {
	s.once.Do(func() {
		s.st.Dir, s.st.Kind, s.st.Max = s.Dir, "session", maxRecord
		s.st.ID = func(r Record) string { return r.ID }
		s.st.Time = func(r Record) time.Time { return r.LastUsed }
	})
	return &s.st
}

// Get returns the live session id. An expired one is ErrNotFound too (Expire removes it).
func (s *Store) Get(id string, now time.Time) (Record, error) {
	if !ValidID(id) {
		return Record{}, fmt.Errorf("%w: %q is not a session id", ErrNotFound, id)
	}
	r, err := s.recs().Get(id)
	if errors.Is(err, store.ErrNotFound) {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Record{}, err
	}
	if now.Sub(r.LastUsed) > s.idle() {
		return Record{}, fmt.Errorf("%w: session %s expired after %s without a turn", ErrNotFound, id, s.idle())
	}
	return r, nil
}

// Put writes r (atomically, 0600).
func (s *Store) Put(r Record) error { return s.recs().Put(r) }

// Delete removes a record; a missing one is not an error.
func (s *Store) Delete(id string) error { return s.recs().Delete(id) }

// List returns the live sessions, most recently used first; unreadable records are skipped and
// named in the second result.
func (s *Store) List(now time.Time) ([]Record, []string) {
	all, bad := s.recs().List()
	var out []Record
	for _, r := range all {
		if now.Sub(r.LastUsed) <= s.idle() {
			out = append(out, r)
		}
	}
	return out, bad
}

// Expire removes the records idle longer than Idle and returns them, so the caller can release
// what they hold.
func (s *Store) Expire(now time.Time) []Record { return s.recs().Expire(now, s.idle(), nil) }
