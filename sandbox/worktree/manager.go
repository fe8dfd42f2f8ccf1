package worktree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// DefaultRootName is the directory under os.TempDir() that holds our worktrees.
const DefaultRootName = "cline-mcp-worktrees"

// CleanupTimeout bounds Remove and Sweep's git work when their ctx has no earlier deadline.
const CleanupTimeout = 60 * time.Second

// SetupError is any failure to create a worktree other than git.ErrNotGit
// (workspace_setup_failed).
type SetupError struct {
	Repo string
	Err  error
}

func (e *SetupError) Error() string { return "worktree setup " + e.Repo + ": " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// CleanupError is a worktree that could not be removed completely (workspace_cleanup_failed).
type CleanupError struct {
	Path string
	Err  error
}

func (e *CleanupError) Error() string { return "worktree cleanup " + e.Path + ": " + e.Err.Error() }
func (e *CleanupError) Unwrap() error { return e.Err }

// Worktree is a detached linked worktree created by Manager.Add. It is owned by the caller,
// who must call Remove exactly when done (extra calls are harmless).
type Worktree struct {
	// Path is the worktree's directory (the cwd for Cline).
	Path string
	// Commit is the commit it is checked out at (the repository's HEAD when it was added).
	Commit string
	// git.Repo is the worktree's layout recorded right after it was created, before anything ran
	// in it: Path, its own git dir <common>/worktrees/<name> and the repository's common dir.
	// Touched and Remove use these paths only; the worktree's .git file and the pointers in
	// its git dir are never read again. For a pooled worktree, Index is a private copy of its
	// index outside the work tree and its git dir (see slot), which no run can reach.
	Repo git.Repo
	// Reused is set when Acquire took the worktree from the pool (moved to Commit and verified
	// pristine) instead of creating it.
	Reused bool
	// Discarded are the reasons why pooled worktrees that Acquire tried before this one failed
	// verification; each of them was removed.
	Discarded []error
	// Cleaned is what Acquire found in a reused worktree's files and removed or repaired
	// before handing it out (see Finding): left by an earlier run.
	Cleaned []Finding

	m     *Manager
	entry string      // our private dir holding owner.json and Path
	top   fs.FileMode // Path's mode when git created it: the mode of every directory it made
	slot  *slot       // the pooled worktree behind this handle; nil when it cannot be pooled

	mu   sync.Mutex
	done bool // removed or released: the handle no longer owns the worktree
}

// Manager creates and removes disposable worktrees, and keeps a pool of idle ones when PoolSize
// is set (see Acquire). The zero value is ready to use; set the fields before the first call. It
// is safe for concurrent use: add and remove on one repository (identified by its git common
// dir) are serialised, different repositories proceed in git.Parallel. Several servers may share
// Root; each entry records its owner for Sweep. Close removes the pool's idle worktrees.
type Manager struct {
	// git.Git runs git; nil means a zero git.Git.
	Git *git.Git
	// Root holds one private entry per worktree; empty means os.TempDir()/cline-mcp-worktrees.
	Root string
	// Instance prefixes entry names (letters, digits, "_"); empty means a random id per Manager.
	Instance string
	// PoolSize is how many idle worktrees per repository Release keeps for later Acquire
	// calls; 0 keeps none (every worktree is removed after its call).
	PoolSize int
	// PoolIdle is how long an idle worktree is kept; 0 means DefaultPoolIdle.
	PoolIdle time.Duration
	// Log receives what the pool does on its own (expiry, removal failures); nil discards it.
	Log *slog.Logger

	pool pool

	once     sync.Once
	initErr  error
	instance string
	mu       sync.Mutex
	locks    map[string]chan struct{}
}

var (
	instanceRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)
	entryRE    = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}-[0-9a-f]{16}$`)
)

func (m *Manager) git() *git.Git {
	if m.Git == nil {
		return &git.Git{}
	}
	return m.Git
}

func (m *Manager) root() string {
	if m.Root == "" {
		return filepath.Join(os.TempDir(), DefaultRootName)
	}
	return m.Root
}

func (m *Manager) init() error {
	m.once.Do(func() {
		m.instance = m.Instance
		if m.instance == "" {
			m.instance = randomHex(4)
		}
		if !instanceRE.MatchString(m.instance) {
			m.initErr = fmt.Errorf("worktree instance %q: want 1-32 letters, digits or _", m.instance)
		}
	})
	return m.initErr
}

// lock serialises worktree administration on one repository. It gives up when ctx ends.
func (m *Manager) lock(ctx context.Context, commonDir string) (unlock func(), err error) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = make(map[string]chan struct{})
	}
	ch, ok := m.locks[commonDir]
	if !ok {
		ch = make(chan struct{}, 1)
		m.locks[commonDir] = ch
	}
	m.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// owner is the content of owner.json, which lets Sweep tell a crashed server's leftovers from
// a live server's worktrees and remove them by recorded paths.
type owner struct {
	Tool         string    `json:"tool"`
	PID          int       `json:"pid"`
	PIDStartTime uint64    `json:"pidStartTime"`    // 0 when unknown on this platform
	Host         string    `json:"host,omitempty"`  // the owner's hostname: pids of another host mean nothing here
	Repo         string    `json:"repo"`            // git common dir
	Admin        string    `json:"admin,omitempty"` // the worktree's own git dir, once created
	Created      time.Time `json:"created"`
}

const ownerTool = "cline-mcp"

// Add creates a detached worktree of repoDir's HEAD commit in a new private directory
// (0700) Root/<instance>-<random>/wt. It returns an error wrapping git.ErrNotGit when repoDir is not
// inside a work tree, and a *SetupError for everything else, including a repository without
// commits and a Root that is not a private directory of this user. On error nothing is left
// behind. Add never uses the pool; Acquire does.
func (m *Manager) Add(ctx context.Context, repoDir string) (*Worktree, error) {
	src, commit, err := m.source(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	return m.create(ctx, src, commit, false)
}

// AddAt is Add at commit (a full object id in repoDir's repository, such as the snapshot commit of
// a review) instead of HEAD. It never uses the pool.
func (m *Manager) AddAt(ctx context.Context, repoDir, commit string) (*Worktree, error) {
	if !git.IsObjectID(commit) {
		return nil, &SetupError{Repo: repoDir, Err: fmt.Errorf("not a commit id: %q", commit)}
	}
	src, _, err := m.source(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	return m.create(ctx, src, commit, false)
}

// source records repoDir's repository and resolves its HEAD, before any run: the part of Add
// and Acquire that asks git where things are. Errors are Add's.
func (m *Manager) source(ctx context.Context, repoDir string) (git.Repo, string, error) {
	g := m.git()
	src, err := g.Open(ctx, repoDir)
	if errors.Is(err, git.ErrNotGit) {
		return git.Repo{}, "", err
	}
	if err != nil {
		return git.Repo{}, "", &SetupError{Repo: repoDir, Err: err}
	}
	if err := m.init(); err != nil {
		return git.Repo{}, "", &SetupError{Repo: src.Top, Err: err}
	}
	commit, err := g.ResolveCommit(ctx, src.Top, "HEAD")
	if errors.Is(err, git.ErrNoCommit) {
		return git.Repo{}, "", &SetupError{Repo: src.Top, Err: errors.New("the repository has no commits yet, so there is nothing to check out")}
	}
	if err != nil {
		return git.Repo{}, "", &SetupError{Repo: src.Top, Err: err}
	}
	return src, commit, nil
}

// create adds a fresh worktree of src at commit. pooled also records it for the pool (see
// newSlot) so that Release can keep it; a worktree whose record fails is still returned, and
// Release removes it.
func (m *Manager) create(ctx context.Context, src git.Repo, commit string, pooled bool) (*Worktree, error) {
	g := m.git()
	o := owner{Tool: ownerTool, PID: os.Getpid(), Repo: src.CommonDir, Created: time.Now().UTC()}
	self := proc.Self()
	o.PIDStartTime, o.Host = self.Start, self.Host
	entry, err := m.newEntry(o)
	if err != nil {
		return nil, &SetupError{Repo: src.Top, Err: err}
	}
	wt := &Worktree{Path: filepath.Join(entry, "wt"), Commit: commit, m: m, entry: entry,
		Repo: git.Repo{Top: filepath.Join(entry, "wt"), CommonDir: src.CommonDir}}

	unlock, err := m.lock(ctx, src.CommonDir)
	if err != nil {
		os.RemoveAll(entry)
		return nil, &SetupError{Repo: src.Top, Err: err}
	}
	_, err = g.Run(ctx, git.Opts{Dir: src.Top}, "worktree", "add", "--detach", "--end-of-options", wt.Path, commit)
	if err == nil {
		// Nothing has run in the new worktree yet, so asking git where its git dir is can be
		// trusted; from here on only the record is used.
		var rec git.Repo
		if rec, err = g.Open(ctx, wt.Path); err == nil {
			err = wt.adopt(rec, src)
		}
		if err == nil {
			var fi fs.FileInfo
			if fi, err = os.Lstat(wt.Path); err == nil {
				wt.top = fi.Mode()
			}
		}
		if err == nil {
			o.Admin = wt.Repo.GitDir
			err = writeOwner(entry, o)
		}
	}
	unlock()
	if err == nil && pooled {
		// Without its record the worktree still serves this call; it is removed afterwards.
		if s, serr := m.newSlot(ctx, wt); serr == nil {
			wt.slot, wt.Repo = s, s.repo
		} else if ctx.Err() != nil {
			err = serr
		} else {
			m.log().Warn("new worktree not pooled", "path", wt.Path, "err", serr)
		}
	}
	if err != nil {
		// git may have registered the worktree before failing (or before ctx killed it).
		if rerr := wt.Remove(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, &SetupError{Repo: src.Top, Err: fmt.Errorf("worktree add %s: %w", commit, err)}
	}
	return wt, nil
}

// adopt checks the freshly created worktree's layout and records it.
func (w *Worktree) adopt(rec git.Repo, src git.Repo) error {
	if rec.Top != w.Path || rec.CommonDir != src.CommonDir || filepath.Dir(rec.GitDir) != filepath.Join(src.CommonDir, "worktrees") {
		return fmt.Errorf("unexpected layout of the new worktree: top %s, git dir %s, common dir %s", rec.Top, rec.GitDir, rec.CommonDir)
	}
	w.Repo = rec
	return nil
}

// newEntry creates Root/<instance>-<random> (0700, checked) with its owner.json.
func (m *Manager) newEntry(o owner) (string, error) {
	root := m.root()
	if err := ensureRoot(root); err != nil {
		return "", err
	}
	var entry string
	for range 5 {
		entry = filepath.Join(root, m.instance+"-"+randomHex(8))
		err := os.Mkdir(entry, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
		entry = ""
	}
	if entry == "" {
		return "", fmt.Errorf("worktree entry in %s: name collisions", root)
	}
	err := makePrivate(entry)
	if err == nil {
		err = writeOwner(entry, o)
	}
	if err != nil {
		os.RemoveAll(entry)
		return "", fmt.Errorf("worktree entry %s: %w", entry, err)
	}
	return entry, nil
}

// writeOwner replaces entry/owner.json atomically.
func writeOwner(entry string, o owner) error {
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	tmp := filepath.Join(entry, ".owner.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("worktree owner file %s: %w", entry, err)
	}
	if err := os.Rename(tmp, filepath.Join(entry, "owner.json")); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("worktree owner file %s: %w", entry, err)
	}
	return nil
}

// ensureRoot creates root (0700) or checks that an existing one is a private directory of
// this user (CheckRoot), so another local user cannot plant or read worktrees in a shared temp
// dir. A root that fails the check is left as it is.
func ensureRoot(root string) error {
	if err := os.MkdirAll(filepath.Dir(root), 0o700); err != nil {
		return fmt.Errorf("worktree root %s: %w", root, err)
	}
	if err := os.Mkdir(root, 0o700); err == nil {
		return makePrivate(root) // ours, just made: only the umask could have narrowed it
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("worktree root %s: %w", root, err)
	}
	return checkRoot(root)
}

// checkRoot reports whether an existing root can be trusted: a real directory (not a
// symlink), owned by this user, mode 0700.
func checkRoot(root string) error {
	fi, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("worktree root %s: %w", root, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("worktree root %s: not a directory (a symlink?); remove it or pass --worktree-root", root)
	}
	if err := checkPrivate(fi); err != nil {
		return fmt.Errorf("worktree root %s: %w; fix it (chmod 700, or remove it) or pass --worktree-root", root, err)
	}
	return nil
}

// CheckRoot reports a worktree root that exists but may not be trusted (see Add). A root that
// does not exist yet is fine: Add creates it.
func (m *Manager) CheckRoot() error {
	root := m.root()
	if _, err := os.Lstat(root); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return checkRoot(root)
}

// makePrivate sets a directory this process just created to 0700 and checks the result.
func makePrivate(dir string) error {
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	return checkPrivate(fi)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Remove deletes the worktree by the paths recorded when it was created: its directory, then
// its own git dir <common>/worktrees/<name> (which is all `git worktree remove` does, and
// what drops the registration). It never reads the worktree's .git file or the pointers in its
// git dir, which a run may have rewritten to name another worktree, and runs no `git worktree
// prune`, which would judge the user's other worktrees. Nothing is followed through a symlink.
// It runs to completion even when ctx is already cancelled (on context.WithoutCancel(ctx) with
// CleanupTimeout). It is idempotent and safe for concurrent use; a worktree that is already
// gone counts as removed. Failure is a *CleanupError.
func (w *Worktree) Remove(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	if err := w.m.removeRecorded(ctx, w.Path, w.Repo.CommonDir, w.Repo.GitDir, w.entry); err != nil {
		return err
	}
	w.done = true
	return nil
}

// Touched lists the files Cline changed inside the worktree relative to its commit: modified,
// deleted and renamed tracked files and new untracked (non-ignored) files, and what git does
// not report (see Finding): FIFOs, sockets and devices ("A", or "T" for a tracked path), hard
// links and permission bits a checkout does not give ("M" for a tracked path). It crosses the trust
// boundary like Inspect: it uses only wt.Repo, recorded at creation, and runs nothing the run
// could have configured. The worktree's index is not written.
func (m *Manager) Touched(ctx context.Context, wt *Worktree) ([]git.FileChange, error) {
	g := m.git()
	ev := git.Evidence{Repo: wt.Repo, Dir: wt.Repo.Top}
	if err := g.Snapshot(ctx, &ev.Repo, &ev); err != nil {
		return nil, fmt.Errorf("touched %s: %w", wt.Path, err)
	}
	o, _, done, err := ev.Repo.Shadowed()
	if err != nil {
		return nil, fmt.Errorf("touched %s: %w", wt.Path, err)
	}
	defer done()
	files, _, err := g.DiffFiles(ctx, o, wt.Commit, ev.Tree)
	if err != nil {
		return nil, fmt.Errorf("touched %s: %w", wt.Path, err)
	}
	if wt.top != 0 {
		if files, err = withOddEntries(ctx, g, o, files, wt.Commit, wt.top); err != nil {
			return nil, fmt.Errorf("touched %s: %w", wt.Path, err)
		}
	}
	return files, nil
}
