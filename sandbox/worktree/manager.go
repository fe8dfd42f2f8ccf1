package worktree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// DefaultRootName is the directory under os.TempDir() that holds our worktrees.
const DefaultRootName = "cline-mcp-worktrees"

// CleanupTimeout bounds Remove and Sweep's git work when their ctx has no earlier deadline.
const CleanupTimeout = 60 * time.Second

// SetupError is any failure to create a worktree other than ErrNotGit
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

	m         *Manager
	repo      string // main work tree root of the repository it was added from
	commonDir string
	entry     string // our private dir holding owner.json and Path

	mu      sync.Mutex
	removed bool
}

// Manager creates and removes disposable worktrees. The zero value is ready to use; set the
// fields before the first call. It is safe for concurrent use: add, remove and prune on one
// repository (identified by its git common dir) are serialised, different repositories proceed
// in parallel. Several servers may share Root; each entry records its owner for Sweep.
type Manager struct {
	// Git runs git; nil means a zero Git.
	Git *Git
	// Root holds one private entry per worktree; empty means os.TempDir()/cline-mcp-worktrees.
	Root string
	// Instance prefixes entry names (letters, digits, "_"); empty means a random id per Manager.
	Instance string

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

func (m *Manager) git() *Git {
	if m.Git == nil {
		return &Git{}
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
// a live server's worktrees.
type owner struct {
	Tool         string    `json:"tool"`
	PID          int       `json:"pid"`
	PIDStartTime uint64    `json:"pidStartTime"` // 0 when unknown on this platform
	Repo         string    `json:"repo"`         // git common dir
	Created      time.Time `json:"created"`
}

const ownerTool = "cline-mcp"

// Add creates a detached worktree of repoDir's HEAD commit in a new private directory
// (0700) Root/<instance>-<random>/wt. It returns an error wrapping ErrNotGit when repoDir is not
// inside a work tree, and a *SetupError for everything else, including a repository without
// commits. On error nothing is left behind.
func (m *Manager) Add(ctx context.Context, repoDir string) (*Worktree, error) {
	g := m.git()
	info, err := g.inspect(ctx, repoDir)
	if errors.Is(err, ErrNotGit) {
		return nil, err
	}
	if err != nil {
		return nil, &SetupError{Repo: repoDir, Err: err}
	}
	if err := m.init(); err != nil {
		return nil, &SetupError{Repo: info.top, Err: err}
	}
	commit, err := g.ResolveCommit(ctx, info.top, "HEAD")
	if errors.Is(err, ErrNoCommit) {
		return nil, &SetupError{Repo: info.top, Err: errors.New("the repository has no commits yet, so there is nothing to check out")}
	}
	if err != nil {
		return nil, &SetupError{Repo: info.top, Err: err}
	}
	entry, err := m.newEntry(info.commonDir)
	if err != nil {
		return nil, &SetupError{Repo: info.top, Err: err}
	}
	wt := &Worktree{Path: filepath.Join(entry, "wt"), Commit: commit, m: m, repo: info.top,
		commonDir: info.commonDir, entry: entry}

	unlock, err := m.lock(ctx, info.commonDir)
	if err != nil {
		os.RemoveAll(entry)
		return nil, &SetupError{Repo: info.top, Err: err}
	}
	_, err = g.run(ctx, runOpts{dir: info.top}, "worktree", "add", "--detach", "--end-of-options", wt.Path, commit)
	unlock()
	if err != nil {
		// git may have registered the worktree before failing (or before ctx killed it).
		if rerr := wt.Remove(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, &SetupError{Repo: info.top, Err: fmt.Errorf("worktree add %s: %w", commit, err)}
	}
	return wt, nil
}

// newEntry creates Root/<instance>-<random> with its owner.json.
func (m *Manager) newEntry(commonDir string) (string, error) {
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
	pid := os.Getpid()
	start, _ := processStartTime(pid)
	data, err := json.Marshal(owner{Tool: ownerTool, PID: pid, PIDStartTime: start, Repo: commonDir, Created: time.Now().UTC()})
	if err == nil {
		err = os.WriteFile(filepath.Join(entry, "owner.json"), data, 0o600)
	}
	if err != nil {
		os.RemoveAll(entry)
		return "", fmt.Errorf("worktree owner file %s: %w", entry, err)
	}
	return entry, nil
}

// ensureRoot creates root (0700) or checks that an existing one is a private directory of
// ours, so another local user cannot plant or read worktrees in a shared temp dir.
func ensureRoot(root string) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("worktree root %s: %w", root, err)
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("worktree root %s: %w", root, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("worktree root %s: not a directory (a symlink?)", root)
	}
	return checkPrivate(root, fi)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Remove deletes the worktree: `git worktree remove --force --force`, `git worktree prune`,
// then its private directory. It runs to completion even when ctx is already cancelled (on
// context.WithoutCancel(ctx) with CleanupTimeout). It is idempotent and safe for concurrent
// use; a worktree that is already gone counts as removed. Failure is a *CleanupError.
func (w *Worktree) Remove(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	if err := w.m.removeEntry(ctx, w.repo, w.commonDir, w.entry); err != nil {
		return &CleanupError{Path: w.Path, Err: err}
	}
	w.removed = true
	return nil
}

// removeEntry removes entry/wt from the repository's worktree list and deletes entry. repo is
// a work tree of the repository or "" to address it through commonDir alone.
func (m *Manager) removeEntry(ctx context.Context, repo, commonDir, entry string) error {
	g := m.git()
	unlock, err := m.lock(ctx, commonDir)
	if err != nil {
		return err
	}
	defer unlock()
	o := runOpts{dir: repo}
	pre := []string{}
	if repo == "" || !isDir(repo) {
		o.dir = commonDir
		pre = []string{"--git-dir=" + commonDir}
	}
	wt := filepath.Join(entry, "wt")
	var errs []error
	if _, err := os.Lstat(wt); err == nil {
		if _, err := g.run(ctx, o, append(pre, "worktree", "remove", "--force", "--force", "--end-of-options", wt)...); err != nil {
			// Fall back to deleting the files; prune then drops the registration.
			if rerr := os.RemoveAll(wt); rerr != nil {
				errs = append(errs, err, rerr)
			}
		}
	}
	if isDir(commonDir) {
		if _, err := g.run(ctx, o, append(pre, "worktree", "prune")...); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(entry); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Touched lists the files Cline changed inside the worktree relative to its commit: modified,
// deleted and renamed tracked files and new untracked (non-ignored) files. The worktree's index
// is not written.
func (m *Manager) Touched(ctx context.Context, wt *Worktree) ([]FileChange, error) {
	g := m.git()
	info, err := g.inspect(ctx, wt.Path)
	if err != nil {
		return nil, fmt.Errorf("touched %s: %w", wt.Path, err)
	}
	var ev Evidence
	if err := g.snapshotTrees(ctx, info, &ev); err != nil {
		return nil, fmt.Errorf("touched %s: %w", wt.Path, err)
	}
	files, _, err := g.diffFiles(ctx, info.top, wt.Commit, ev.Tree)
	if err != nil {
		return nil, fmt.Errorf("touched %s: %w", wt.Path, err)
	}
	return files, nil
}
