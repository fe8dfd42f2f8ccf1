package worktree

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/filetree"
)

func newPool(t *testing.T, size int) *Manager {
	t.Helper()
	m := newManager(t)
	m.PoolSize = size
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

// files describes a work tree as a user sees it (filetree.Describe).
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out, err := filetree.Describe(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fresh is what a new worktree of repo's HEAD holds.
func fresh(t *testing.T, repo string) map[string]string {
	t.Helper()
	wt, err := newManager(t).Add(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Remove(context.Background())
	return files(t, wt.Path)
}

func wantSame(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for _, d := range filetree.Diff(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

func acquire(t *testing.T, m *Manager, repo string) *Worktree {
	t.Helper()
	wt, err := m.Acquire(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range wt.Discarded {
		t.Logf("discarded: %v", d)
	}
	return wt
}

func release(t *testing.T, wt *Worktree) Released {
	t.Helper()
	rel, err := wt.Release(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

var poolRepoFiles = map[string]string{
	"README.md":       "hello\n",
	"src/a.go":        "package a\n",
	"src/b.go":        "package a // b\n",
	"src/deep/c.txt":  "c\n",
	"doc/guide.md":    "guide\n",
	"crlf.txt":        "one\ntwo\n",
	".gitignore":      "*.log\nbuild/\n",
	".gitattributes":  "*.md text\n",
	"tools/run.sh":    "#!/bin/sh\n",
	"keep/unchanged":  "same\n",
	"other/z/file.go": "z\n",
}

// TestPoolReuseSeesExactlyHEAD: whatever a run did to the files — tracked files modified
// (also with the old size and mtime), deleted, made executable, replaced by a symlink or a
// directory; untracked, ignored and hidden files; a symlinked directory pointing outside; a
// .gitattributes that would make a CRLF file pass as unchanged — the next call gets exactly
// what a fresh worktree holds, and nothing outside the work tree is touched.
func TestPoolReuseSeesExactlyHEAD(t *testing.T) {
	repo := newRepo(t, poolRepoFiles)
	want := fresh(t, repo)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "precious.txt"), "do not touch\n")
	m := newPool(t, 1)

	wt := acquire(t, m, repo)
	if wt.Reused {
		t.Errorf("first Acquire: Reused true, want a fresh worktree")
	}
	first := wt.Path
	p := func(rel string) string { return filepath.Join(wt.Path, filepath.FromSlash(rel)) }
	same := p("src/b.go")
	fi, _ := os.Stat(same)
	writeFile(t, same, "package X // X\n") // same size
	os.Chtimes(same, fi.ModTime(), fi.ModTime())
	writeFile(t, p("README.md"), "changed\n")
	os.Remove(p("doc/guide.md"))
	os.Chmod(p("keep/unchanged"), 0o755)
	writeFile(t, p("crlf.txt"), "one\r\ntwo\r\n")
	writeFile(t, p(".gitattributes"), "*.md text\n*.txt text\n")
	os.RemoveAll(p("src/deep"))
	if err := os.Symlink(outside, p("src/deep")); err != nil {
		t.Fatal(err)
	}
	os.Remove(p("tools/run.sh"))
	writeFile(t, p("tools/run.sh/inside"), "a dir now\n")
	writeFile(t, p("new.txt"), "untracked\n")
	writeFile(t, p("build/out.bin"), "ignored\n")
	writeFile(t, p("debug.log"), "ignored\n")
	writeFile(t, p(".env"), "SECRET=1\n")
	os.MkdirAll(p("empty/dir"), 0o755)
	if err := os.Symlink(filepath.Join(outside, "precious.txt"), p("other/link")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p("other/z"), 0o500)
	if rel := release(t, wt); !rel.Pooled || rel.Discarded != nil {
		t.Fatalf("Release: got %+v, want pooled", rel)
	}

	wt = acquire(t, m, repo)
	if !wt.Reused || wt.Path != first || len(wt.Discarded) != 0 {
		t.Fatalf("second Acquire: Reused %v, path %s, discarded %v; want the pooled %s reused", wt.Reused, wt.Path, wt.Discarded, first)
	}
	wantSame(t, "reused worktree", files(t, wt.Path), want)
	if got := files(t, outside); len(got) != 1 || !strings.Contains(got["precious.txt"], "do not touch") {
		t.Errorf("outside the work tree: got %v, want precious.txt untouched", got)
	}
	// git run by Cline in the worktree sees a clean checkout of HEAD.
	if st := gitT(t, wt.Path, "status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("git status in the reused worktree:\n%s\nwant clean", st)
	}
	if head, want := gitT(t, wt.Path, "rev-parse", "HEAD"), gitT(t, repo, "rev-parse", "HEAD"); head != want {
		t.Errorf("HEAD: got %s, want %s", head, want)
	}
	release(t, wt)
}

// TestPoolMovesToNewHEAD: a pooled worktree follows the repository's HEAD and rewrites only the
// files that differ.
func TestPoolMovesToNewHEAD(t *testing.T) {
	repo := newRepo(t, poolRepoFiles)
	m := newPool(t, 1)
	wt := acquire(t, m, repo)
	before, err := os.Stat(filepath.Join(wt.Path, "keep", "unchanged"))
	if err != nil {
		t.Fatal(err)
	}
	release(t, wt)

	writeFile(t, filepath.Join(repo, "src", "a.go"), "package a // v2\n")
	writeFile(t, filepath.Join(repo, "added", "n.txt"), "new\n")
	os.Remove(filepath.Join(repo, "doc", "guide.md"))
	gitT(t, repo, "add", "-A")
	gitT(t, repo, "commit", "-q", "-m", "v2")
	head := gitT(t, repo, "rev-parse", "HEAD")

	wt = acquire(t, m, repo)
	if !wt.Reused || wt.Commit != head {
		t.Fatalf("Acquire after a commit: Reused %v, Commit %s; want reused at %s", wt.Reused, wt.Commit, head)
	}
	wantSame(t, "moved worktree", files(t, wt.Path), fresh(t, repo))
	after, err := os.Stat(filepath.Join(wt.Path, "keep", "unchanged"))
	if err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("an unchanged file was rewritten by the move (%v)", err)
	}
	if got := gitT(t, wt.Path, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD in the worktree: got %s, want %s", got, head)
	}
	if st := gitT(t, wt.Path, "status", "--porcelain"); st != "" {
		t.Errorf("git status after the move:\n%s\nwant clean", st)
	}
	release(t, wt)
}

// TestPoolDiscardsTampered: a worktree whose git metadata changed, or that holds a planted .git,
// is removed instead of reused — whether the change is seen when it is released or when it is
// taken again — and the call gets a fresh worktree.
func TestPoolDiscardsTampered(t *testing.T) {
	repo := newRepo(t, poolRepoFiles)
	tampers := map[string]func(t *testing.T, wt *Worktree){
		"hook in the git dir": func(t *testing.T, wt *Worktree) {
			writeFile(t, filepath.Join(wt.Repo.GitDir, "hooks", "post-checkout"), "#!/bin/sh\ntouch /tmp/pwned\n")
		},
		"config.worktree": func(t *testing.T, wt *Worktree) {
			writeFile(t, filepath.Join(wt.Repo.GitDir, "config.worktree"), "[core]\n\tfsmonitor = /tmp/evil\n")
		},
		".git pointer": func(t *testing.T, wt *Worktree) {
			writeFile(t, filepath.Join(wt.Path, ".git"), "gitdir: "+filepath.Join(wt.Path, "evil")+"\n")
		},
		"gitdir pointer": func(t *testing.T, wt *Worktree) {
			writeFile(t, filepath.Join(wt.Repo.GitDir, "gitdir"), "/elsewhere/.git\n")
		},
		"commondir pointer": func(t *testing.T, wt *Worktree) {
			writeFile(t, filepath.Join(wt.Repo.GitDir, "commondir"), "/elsewhere\n")
		},
		"HEAD": func(t *testing.T, wt *Worktree) {
			writeFile(t, filepath.Join(wt.Repo.GitDir, "HEAD"), "ref: refs/heads/main\n")
		},
		"nested repository": func(t *testing.T, wt *Worktree) {
			gitT(t, filepath.Join(wt.Path, "src"), "init", "-q", "nested")
		},
		".git below the top, in a tracked directory": func(t *testing.T, wt *Worktree) {
			writeFile(t, filepath.Join(wt.Path, "src", ".git"), "gitdir: /tmp/evil\n")
		},
		".GIT below the top": func(t *testing.T, wt *Worktree) {
			writeFile(t, filepath.Join(wt.Path, "doc", ".GIT", "config"), "[core]\n")
		},
		"work tree mode": func(t *testing.T, wt *Worktree) {
			os.Chmod(wt.Path, 0o777)
		},
	}
	for _, name := range slices.Sorted(maps.Keys(tampers)) {
		tamper := tampers[name]
		t.Run(name, func(t *testing.T) {
			for _, when := range []string{"during the run", "while idle"} {
				m := newPool(t, 1)
				wt := acquire(t, m, repo)
				old := wt.Path
				if when == "during the run" {
					tamper(t, wt)
				}
				rel := release(t, wt)
				if when == "while idle" {
					if !rel.Pooled {
						t.Fatalf("%s: an untouched worktree was not pooled: %+v", when, rel)
					}
					tamper(t, wt)
				}
				// Release checks the git metadata; planted files are found when the worktree is taken.
				inFiles := strings.Contains(name, "repository") || strings.Contains(name, "below") || strings.Contains(name, "tracked")
				if when == "during the run" && !inFiles && (rel.Pooled || rel.Discarded == nil) {
					t.Errorf("%s: Release got %+v, want discarded", when, rel)
				}
				wt = acquire(t, m, repo)
				if wt.Reused || wt.Path == old {
					t.Errorf("%s: the tampered worktree was reused", when)
				}
				if !rel.Pooled == (len(wt.Discarded) != 0) {
					t.Errorf("%s: Discarded %v after Release %+v", when, wt.Discarded, rel)
				}
				if _, err := os.Lstat(filepath.Dir(old)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: the tampered worktree's dir is still there (%v)", when, err)
				}
				wantSame(t, when, files(t, wt.Path), fresh(t, repo))
				release(t, wt)
				if err := m.Close(t.Context()); err != nil {
					t.Fatal(err)
				}
				if got := worktreePaths(t, repo); len(got) != 1 {
					t.Errorf("%s: worktrees after Close: %v, want only the main one", when, got)
				}
			}
		})
	}
}

// TestPoolIndexRewrittenByTheRun: the worktree's own index is not what the pool trusts — git
// run by Cline may refresh it (or a run may rewrite it to hide a change); the next call still
// gets exactly HEAD and a fresh copy of the index.
func TestPoolIndexRewrittenByTheRun(t *testing.T) {
	repo := newRepo(t, poolRepoFiles)
	m := newPool(t, 1)
	wt := acquire(t, m, repo)
	writeFile(t, filepath.Join(wt.Path, "README.md"), "hidden change\n")
	gitT(t, wt.Path, "update-index", "--assume-unchanged", "README.md") // rewrites the index
	if st := gitT(t, wt.Path, "status", "--porcelain"); st != "" {
		t.Fatalf("the setup should hide the change from git status, got %q", st)
	}
	release(t, wt)
	wt = acquire(t, m, repo)
	if !wt.Reused {
		t.Errorf("not reused: %v", wt.Discarded)
	}
	wantSame(t, "after an index rewrite", files(t, wt.Path), fresh(t, repo))
	if v := gitT(t, wt.Path, "ls-files", "-v", "README.md"); v != "H README.md" {
		t.Errorf("index entry: got %q, want H README.md (no assume-unchanged bit)", v)
	}
	release(t, wt)
}

// TestPoolConcurrentCallsGetTheirOwnWorktree: calls on one repository at the same time never
// share a worktree, and the pool keeps at most PoolSize of them.
func TestPoolConcurrentCallsGetTheirOwnWorktree(t *testing.T) {
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	m := newPool(t, 2)
	for round := range 3 {
		const n = 4
		wts := make([]*Worktree, n)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { wts[i], errs[i] = m.Acquire(t.Context(), repo) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		reused := 0
		for _, wt := range wts {
			if seen[wt.Path] {
				t.Fatalf("round %d: %s handed to two calls", round, wt.Path)
			}
			seen[wt.Path] = true
			if wt.Reused {
				reused++
			}
		}
		if want := min(round, 1) * 2; reused != want {
			t.Errorf("round %d: %d reused, want %d", round, reused, want)
		}
		pooled := 0
		for _, wt := range wts {
			if release(t, wt).Pooled {
				pooled++
			}
		}
		if pooled != 2 {
			t.Errorf("round %d: %d pooled, want PoolSize 2", round, pooled)
		}
		if got := len(worktreePaths(t, repo)); got != 3 {
			t.Errorf("round %d: %d worktrees, want main + 2 idle", round, got)
		}
	}
}

// TestPoolExpiryAndClose: idle worktrees are removed after PoolIdle and by Close; after Close a
// released worktree is removed at once.
func TestPoolExpiryAndClose(t *testing.T) {
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	other := newRepo(t, map[string]string{"o.txt": "o\n"})
	m := newPool(t, 2)
	m.PoolIdle = 50 * time.Millisecond
	gone := make(chan string, 10)
	m.pool.removed = func(p string) { gone <- p }
	wt := acquire(t, m, repo)
	release(t, wt)
	select {
	case p := <-gone:
		if p != wt.Path {
			t.Errorf("expired %s, want %s", p, wt.Path)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the idle worktree did not expire")
	}
	if got := worktreePaths(t, repo); len(got) != 1 {
		t.Errorf("worktrees after expiry: %v", got)
	}

	m.PoolIdle = time.Hour
	var held []*Worktree
	for _, r := range []string{repo, repo, other} {
		held = append(held, acquire(t, m, r))
	}
	for _, wt := range held[1:] {
		if !release(t, wt).Pooled {
			t.Errorf("%s not pooled", wt.Path)
		}
	}
	if err := m.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A worktree released after Close is removed at once.
	if rel := release(t, held[0]); rel.Pooled {
		t.Errorf("released after Close: pooled, want removed")
	}
	for _, r := range []string{repo, other} {
		if got := worktreePaths(t, r); len(got) != 1 {
			t.Errorf("worktrees after Close: %v", got)
		}
	}
	if list, _ := os.ReadDir(m.Root); len(list) != 0 {
		t.Errorf("entries after Close: %v", list)
	}
}

// TestPoolNotForFilterProgramsOrSparse: repositories whose checkout runs a filter program (git.Git
// LFS) or is sparse are never pooled.
func TestPoolNotForFilterProgramsOrSparse(t *testing.T) {
	for name, setup := range map[string]func(repo string){
		"filter": func(repo string) {
			gitT(t, repo, "config", "filter.lfs.smudge", "cat")
			gitT(t, repo, "config", "filter.lfs.clean", "cat")
		},
		"sparse": func(repo string) { gitT(t, repo, "config", "core.sparseCheckout", "true") },
	} {
		t.Run(name, func(t *testing.T) {
			repo := newRepo(t, map[string]string{".gitattributes": "*.bin filter=lfs\n", "a.bin": "x"})
			setup(repo)
			m := newPool(t, 1)
			wt := acquire(t, m, repo)
			if rel := release(t, wt); rel.Pooled {
				t.Errorf("pooled, want removed")
			}
			if got := worktreePaths(t, repo); len(got) != 1 {
				t.Errorf("worktrees: %v", got)
			}
		})
	}
	// A filter the config defines but the attributes never use does not matter.
	repo := newRepo(t, map[string]string{"a.txt": "x"})
	gitT(t, repo, "config", "filter.lfs.smudge", "cat")
	m := newPool(t, 1)
	release(t, acquire(t, m, repo))
	if wt := acquire(t, m, repo); !wt.Reused {
		t.Errorf("an unused filter kept the repository out of the pool")
	} else {
		release(t, wt)
	}
}

// TestSweepRemovesPooledWorktreesOfDeadServers: idle worktrees of a server that died are
// removed by the next server's sweep like any other leftover.
func TestSweepRemovesPooledWorktreesOfDeadServers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("rewriteOwner's dead pid comes from a Unix child")
	}
	repo := newRepo(t, poolRepoFiles)
	m := newPool(t, 1)
	wt := acquire(t, m, repo)
	release(t, wt)
	rewriteOwner(t, wt, func(o *owner) { o.PID = deadPID(t); o.PIDStartTime = 1 })
	removed, err := (&Manager{Root: m.Root}).Sweep(t.Context())
	if err != nil || !slices.Equal(removed, []string{filepath.Dir(wt.Path)}) {
		t.Errorf("Sweep: removed %v (%v), want the pooled entry", removed, err)
	}
	if got := worktreePaths(t, repo); len(got) != 1 {
		t.Errorf("worktrees after Sweep: %v", got)
	}
}

// deadPID returns the pid of a process that certainly ended: a child we waited for.
func deadPID(t *testing.T) int {
	t.Helper()
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	return child.Process.Pid
}
