// Package archive owns the tar archives a copying executor exchanges with a container: the tree
// that goes in (WriteTree, with a Manifest of what went in) and the tree that comes back, read as
// hostile input (ReadBack: every entry checked against the rules of sandbox.Return and the
// Limits, changed files staged in a private Stage) and applied to the host all or nothing
// (Plan.Apply, through an os.Root of the destination).
//
// It uses only the standard library (internal/archtest enforces it), so the parser a hostile
// container talks to can be read, fuzzed (FuzzReadBack) and reused by another executor on its
// own. Limits are checked on what an entry declares, before any of its bytes is read or
// written: the host never stages more than Limits.Staged for one archive, nor more than a
// shared Budget for all archives in flight.
package archive

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// ErrRefused marks an archive (or an entry of it) that a copy back refuses: it broke a rule or
// a limit. Nothing was written to the destination.
var ErrRefused = errors.New("refused")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// Refusef returns an error wrapping ErrRefused, for the executor's own checks of what a
// container sends (a mount root that is no longer a directory).
func Refusef(format string, args ...any) error { return refuse(format, args...) }

// Limits bound what ReadBack accepts. Every limit is checked on the entry's header (its
// declared size, its name) before the entry's content is read, so the host neither reads nor
// stages past a limit. A zero field means no entries/bytes at all, not "unlimited".
type Limits struct {
	// Entries bounds the entries of the archive (each costs memory: its path is remembered).
	Entries int
	// Read bounds the declared bytes of all entries together: what the host reads and hashes.
	Read int64
	// File bounds the declared size of one file that is staged (new or changed).
	File int64
	// Staged bounds the disk the staged files of one archive take, each file counted in
	// whole blocks of StageBlock bytes (an empty file takes one): what the host's temp dir
	// holds at most for this archive.
	Staged int64
	// Name bounds the bytes of one entry's path and of a symbolic link's target.
	Name int
	// Depth bounds the components of one entry's path.
	Depth int
	// Names bounds the bytes of all paths and link targets together: what the reader keeps
	// in memory while it reads.
	Names int64
}

// DefaultLimits are generous for a source tree and small against a disk.
var DefaultLimits = Limits{
	Entries: 500_000,
	Read:    16 << 30,
	File:    1 << 30,
	Staged:  2 << 30,
	Name:    4096,
	Depth:   256,
	Names:   64 << 20,
}

// StageBlock is the unit in which a staged file counts against Limits.Staged and a Budget:
// a file system allocates whole blocks, and an empty file still takes an inode.
const StageBlock = 4096

// stageCost is what a staged file of size bytes counts.
func stageCost(size int64) int64 {
	if size <= 0 {
		return StageBlock
	}
	return (size + StageBlock - 1) / StageBlock * StageBlock
}

// Budget is staging space shared by all archives in flight (an executor's concurrent copy
// backs), so the host's temp dir holds at most its limit whatever the number of calls. It is
// safe for concurrent use.
type Budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

// NewBudget returns a Budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// take reserves n bytes, or reports false (and reserves nothing) when that would pass the limit.
func (b *Budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

func (b *Budget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// Limit is the most bytes the budget reserves at once.
func (b *Budget) Limit() int64 { return b.limit }

// InUse is the bytes reserved now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Stage is a private directory (0700) where ReadBack keeps the changed files of one archive
// until Plan.Apply has copied them. Close removes it and gives its reservation back to the
// Budget. A Stage is used by one ReadBack at a time.
type Stage struct {
	dir    string
	shared *Budget
	held   int64
	files  int
}

// NewStage creates a Stage in parent ("" is the temp dir) whose files count against shared
// (nil: only against the archive's Limits).
func NewStage(parent string, shared *Budget) (*Stage, error) {
	dir, err := os.MkdirTemp(parent, "cline-mcp-back-")
	if err != nil {
		return nil, fmt.Errorf("create the staging directory: %w", err)
	}
	return &Stage{dir: dir, shared: shared}, nil
}

// Dir is the stage's directory.
func (s *Stage) Dir() string { return s.dir }

// reserve counts n more bytes against the shared budget.
func (s *Stage) reserve(n int64) error {
	if s.shared != nil && !s.shared.take(n) {
		return refuse("staging %s more would pass the %s this server stages at most for all copy backs in flight (%s in use)",
			size(n), size(s.shared.limit), size(s.shared.InUse()))
	}
	s.held += n
	return nil
}

// release gives back n bytes of a staged file that was removed again.
func (s *Stage) release(n int64) {
	if s.shared != nil {
		s.shared.give(n)
	}
	s.held -= n
}

// Close removes the stage and everything in it. It is idempotent.
func (s *Stage) Close() error {
	err := os.RemoveAll(s.dir)
	if s.held > 0 {
		s.release(s.held)
	}
	return err
}

// size formats a byte count for a message a user reads.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
