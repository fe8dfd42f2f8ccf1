package run

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// dirLayouts remember the repository layout (git.Repo; nil: not in one) of ask_cline's
// directories for the container mounts of the next call in the same directory, so a warm Docker
// call asks no git process for its mounts (about 2 ms, a fifth of what such a call costs beyond a
// host one). A layout is used again only while nothing it was read from changed: every
// directory from the call's directory up to the work tree's top (the file system's root outside a
// repository: a new .git anywhere above changes that directory), the top's .git, the git dirs and
// their config files, each the same file with the same size, mode and modification time; and
// for at most layoutTTL. A layout read while one of them had just changed (within racyLayout:
// a coarse clock may not show a change right after it) is not kept. It is the host's own
// reading of the user's repository before any run, as git.Open's is.
type dirLayouts struct {
	mu sync.Mutex
	m  map[string]dirLayout
}

type dirLayout struct {
	repo  *git.Repo
	seen  []stamped
	until time.Time
}

// stamped is a path as it was when the layout was read (fi nil: absent).
type stamped struct {
	path string
	fi   os.FileInfo
}

const (
	layoutTTL  = 30 * time.Second
	racyLayout = 2 * time.Second
	maxLayouts = 64
)

// open returns dir's layout: a remembered one that still holds, or git's (then remembered).
func (l *dirLayouts) open(ctx context.Context, g Git, dir string) *git.Repo {
	dir = filepath.Clean(dir)
	l.mu.Lock()
	known, ok := l.m[dir]
	l.mu.Unlock()
	if ok && time.Now().Before(known.until) && stillSame(known.seen) {
		return known.repo
	}
	var repo *git.Repo
	if r, err := g.Open(ctx, dir); err == nil {
		repo = &r
	}
	seen, racy := layoutStamps(dir, repo)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxLayouts {
		l.m = map[string]dirLayout{}
	}
	if racy {
		delete(l.m, dir)
	} else {
		l.m[dir] = dirLayout{repo: repo, seen: seen, until: time.Now().Add(layoutTTL)}
	}
	return repo
}

// layoutStamps stamps what dir's layout was read from; racy when one of them changed within
// racyLayout.
func layoutStamps(dir string, repo *git.Repo) ([]stamped, bool) {
	var paths []string
	for d := dir; ; d = filepath.Dir(d) {
		paths = append(paths, d)
		if (repo != nil && d == repo.Top) || filepath.Dir(d) == d {
			break
		}
	}
	if repo != nil {
		paths = append(paths, filepath.Join(repo.Top, ".git"), repo.GitDir, repo.CommonDir,
			filepath.Join(repo.CommonDir, "config"), filepath.Join(repo.GitDir, "config.worktree"))
	}
	now := time.Now()
	racy := false
	out := make([]stamped, len(paths))
	for i, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			fi = nil
		} else if now.Sub(fi.ModTime()) < racyLayout {
			racy = true
		}
		out[i] = stamped{path: p, fi: fi}
	}
	return out, racy
}

// stillSame reports whether every stamped path is as it was.
func stillSame(seen []stamped) bool {
	for _, s := range seen {
		fi, err := os.Lstat(s.path)
		if err != nil {
			fi = nil
		}
		if (fi == nil) != (s.fi == nil) {
			return false
		}
		if fi != nil && !(os.SameFile(fi, s.fi) && fi.ModTime().Equal(s.fi.ModTime()) && fi.Size() == s.fi.Size() && fi.Mode() == s.fi.Mode()) {
			return false
		}
	}
	return true
}
