//go:build unix

package worktree

import (
	"context"
	"github.com/cline-mcp/cline-mcp/internal/gitfixture"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Escape tests of the git trust boundary (Inspect, Compare, Touched, Remove): a run leaves
// behind what would make a naive host git execute a program or touch another worktree. Each
// test first proves the trap is live — plain git, as this package used to run it, springs it —
// and then that the boundary does not.

func TestEscapeWorkspaceRedirects(t *testing.T) {
	for _, what := range []string{"gitfile", "commondir", "gitdir"} {
		t.Run(what, func(t *testing.T) {
			ctx := t.Context()
			tr := gitfixture.NewTrap(t)
			repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
			m := newManager(t)
			wt, err := m.Add(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			planted := filepath.Join(wt.Path, ".evil-git")
			tr.Plant(t, planted)
			switch what {
			case "gitfile":
				writeFile(t, filepath.Join(wt.Path, ".git"), "gitdir: "+planted+"\n")
			case "commondir":
				writeFile(t, filepath.Join(wt.Repo.GitDir, "commondir"), planted+"\n")
			case "gitdir":
				writeFile(t, filepath.Join(wt.Repo.GitDir, "gitdir"), filepath.Join(planted, "x")+"\n")
			}
			writeFile(t, filepath.Join(wt.Path, ".gitattributes"), "* filter=evil diff=evil\n")
			writeFile(t, filepath.Join(wt.Path, "f.txt"), "v2\n")
			if what != "gitdir" { // the gitdir pointer only matters to cleanup
				gitfixture.Naive(wt.Path, "add", "-A")
				tr.Reset(t)
			}

			files, err := m.Touched(ctx, wt)
			if err != nil {
				t.Fatal(err)
			}
			if err := wt.Remove(ctx); err != nil {
				t.Fatal(err)
			}
			if tr.Sprung() {
				t.Fatalf("host git ran a program the run configured: %s", tr.Read())
			}
			var paths []string
			for _, f := range files {
				paths = append(paths, f.Path)
			}
			if !slices.Contains(paths, "f.txt") || !slices.Contains(paths, ".gitattributes") {
				t.Errorf("touched: got %v, want the run's edits of the recorded worktree", paths)
			}
			if got := worktreePaths(t, repo); !slices.Equal(got, []string{resolved(t, repo)}) {
				t.Errorf("worktrees after Remove: got %v, want only the main one", got)
			}
			if _, err := os.Stat(wt.Repo.GitDir); !os.IsNotExist(err) {
				t.Errorf("the worktree's git dir is left: %v", err)
			}
		})
	}
}

// userWorktree is a second linked worktree of the user's with an uncommitted file and a staged
// change.
func userWorktree(t *testing.T, repo string) (dir string) {
	t.Helper()
	// Named to sort after ours ("wt"): `git worktree prune` drops the later of two entries that
	// name the same directory.
	dir = filepath.Join(t.TempDir(), "yours")
	gitT(t, repo, "worktree", "add", "-q", "-b", "yours", dir)
	writeFile(t, filepath.Join(dir, "draft.txt"), "unsaved work\n")
	writeFile(t, filepath.Join(dir, "f.txt"), "staged change\n")
	gitT(t, dir, "add", "f.txt")
	return dir
}

func TestEscapeCleanupRedirectAtUsersOtherWorktree(t *testing.T) {
	attack := func(t *testing.T, repo, mine string, wt *Worktree) {
		t.Helper()
		other := filepath.Join(resolved(t, repo), ".git", "worktrees", "yours")
		if _, err := os.Stat(other); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(wt.Path, ".git"), "gitdir: "+other+"\n")
		writeFile(t, filepath.Join(wt.Repo.GitDir, "gitdir"), filepath.Join(mine, ".git")+"\n")
	}
	intact := func(t *testing.T, repo, mine string) []string {
		var broken []string
		if out, err := gitRaw(mine, "diff", "--cached", "--name-only"); err != nil || strings.TrimSpace(out) != "f.txt" {
			broken = append(broken, "staged change lost ("+strings.TrimSpace(out)+")")
		}
		if data, err := os.ReadFile(filepath.Join(mine, "draft.txt")); err != nil || string(data) != "unsaved work\n" {
			broken = append(broken, "uncommitted file lost")
		}
		if !slices.Contains(worktreePaths(t, repo), mine) {
			broken = append(broken, "registration lost")
		}
		return broken
	}

	// The attack is live: the cleanup this package used to run breaks the user's worktree.
	{
		ctx := t.Context()
		repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
		mine := resolved(t, userWorktree(t, repo))
		wt, err := newManager(t).Add(ctx, repo)
		if err != nil {
			t.Fatal(err)
		}
		attack(t, repo, mine, wt)
		gitRaw(repo, "worktree", "remove", "--force", "--force", wt.Path)
		gitRaw(repo, "worktree", "prune")
		if broken := intact(t, repo, mine); len(broken) == 0 {
			t.Fatal("the legacy cleanup left the user's worktree intact: the attack is not live, the test proves nothing")
		} else {
			t.Logf("legacy cleanup: %v", broken)
		}
		os.RemoveAll(filepath.Dir(wt.Path))
	}

	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	mine := resolved(t, userWorktree(t, repo))
	m := newManager(t)
	wt, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	attack(t, repo, mine, wt)
	if err := wt.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if broken := intact(t, repo, mine); len(broken) > 0 {
		t.Errorf("Remove touched the user's other worktree: %v", broken)
	}
	if got := worktreePaths(t, repo); !slices.Equal(got, []string{resolved(t, repo), mine}) {
		t.Errorf("worktrees: got %v, want main and the user's", got)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Errorf("our worktree is left: %v", err)
	}

	// The sweeper after a crash takes the same care.
	wt2, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	attack(t, repo, mine, wt2)
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	rewriteOwner(t, wt2, func(o *owner) { o.PID = child.Process.Pid; o.PIDStartTime = 1 })
	if _, err := (&Manager{Root: m.Root}).Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if broken := intact(t, repo, mine); len(broken) > 0 {
		t.Errorf("Sweep touched the user's other worktree: %v", broken)
	}
	if got := worktreePaths(t, repo); !slices.Equal(got, []string{resolved(t, repo), mine}) {
		t.Errorf("worktrees after Sweep: got %v, want main and the user's", got)
	}
}
