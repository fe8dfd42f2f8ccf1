package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

func newManager(t *testing.T) *Manager {
	t.Helper()
	return &Manager{Root: filepath.Join(t.TempDir(), "root"), Instance: "test"}
}

func TestAddRemove(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	head := gitT(t, repo, "rev-parse", "HEAD")
	m := newManager(t)
	wt, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if wt.Commit != head {
		t.Errorf("Commit: got %s, want %s", wt.Commit, head)
	}
	entry := filepath.Dir(wt.Path)
	if filepath.Dir(entry) != m.Root || !entryRE.MatchString(filepath.Base(entry)) || !strings.HasPrefix(filepath.Base(entry), "test-") {
		t.Errorf("Path %s: want Root/test-<random>/wt", wt.Path)
	}
	for _, dir := range []string{m.Root, entry} {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: got mode %v (%v), want 0700", dir, fi.Mode().Perm(), err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(wt.Path, "f.txt")); err != nil || string(data) != "v1\n" {
		t.Errorf("checked-out f.txt: got %q (%v), want v1", data, err)
	}
	list := gitT(t, repo, "worktree", "list", "--porcelain")
	if want := "worktree " + wt.Path + "\nHEAD " + head + "\ndetached"; !strings.Contains(list, want) {
		t.Errorf("worktree list:\n%s\nwant it to contain\n%s", list, want)
	}
	// The main checkout's HEAD and branch are untouched.
	if got := gitT(t, repo, "symbolic-ref", "HEAD"); got != "refs/heads/main" {
		t.Errorf("main HEAD: got %s, want refs/heads/main", got)
	}

	if err := wt.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if got := worktreePaths(t, repo); !slices.Equal(got, []string{resolved(t, repo)}) {
		t.Errorf("worktrees after Remove: got %v, want only the main one", got)
	}
	if _, err := os.Stat(entry); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("entry dir after Remove: got %v, want it gone", err)
	}
	if err := wt.Remove(ctx); err != nil {
		t.Errorf("second Remove: got %v, want nil", err)
	}
}

func TestRemoveAfterCancel(t *testing.T) {
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	m := newManager(t)
	ctx, cancel := context.WithCancel(t.Context())
	wt, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := wt.Remove(ctx); err != nil {
		t.Fatalf("Remove with a cancelled ctx: %v", err)
	}
	if got := worktreePaths(t, repo); len(got) != 1 {
		t.Errorf("worktrees: got %v, want only the main one", got)
	}
	if _, err := os.Stat(wt.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worktree dir: got %v, want it gone", err)
	}
}

func TestRemoveWhenAlreadyGone(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	m := newManager(t)
	wt, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	// Someone deleted the directory behind our back.
	if err := os.RemoveAll(filepath.Dir(wt.Path)); err != nil {
		t.Fatal(err)
	}
	if err := wt.Remove(ctx); err != nil {
		t.Fatalf("Remove of a vanished worktree: got %v, want nil", err)
	}
	if got := worktreePaths(t, repo); len(got) != 1 {
		t.Errorf("worktrees: got %v, want the stale registration pruned", got)
	}
}

func TestConcurrentAddRemove(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n", "dir/g.txt": "g\n"})
	other := newRepo(t, map[string]string{"o.txt": "o\n"})
	m := newManager(t)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		r := repo
		if i >= 8 {
			r = other
		}
		wg.Go(func() {
			wt, err := m.Add(ctx, r)
			if err != nil {
				errs <- err
				return
			}
			if _, err := os.Stat(filepath.Join(wt.Path, ".git")); err != nil {
				errs <- err
			}
			if err := wt.Remove(ctx); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, r := range []string{repo, other} {
		if got := worktreePaths(t, r); len(got) != 1 {
			t.Errorf("worktrees of %s: got %v, want only the main one", r, got)
		}
	}
	if entries, _ := os.ReadDir(m.Root); len(entries) != 0 {
		t.Errorf("root after all removes: got %d entries, want 0", len(entries))
	}
}

func TestAddErrors(t *testing.T) {
	bare := t.TempDir()
	gitT(t, bare, "init", "-q", "--bare")
	withCommit := newRepo(t, nil)
	unborn := t.TempDir()
	gitT(t, unborn, "init", "-q")
	tests := []struct {
		name      string
		dir       string
		wantNoGit bool
	}{
		{"plain dir", t.TempDir(), true},
		{"missing dir", filepath.Join(t.TempDir(), "nope"), true},
		{"bare repository", bare, true},
		{"inside .git", filepath.Join(withCommit, ".git"), true},
		{"no commits", unborn, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t)
			wt, err := m.Add(t.Context(), tt.dir)
			if wt != nil || err == nil {
				t.Fatalf("got %v, %v, want an error", wt, err)
			}
			var se *SetupError
			if got := errors.Is(err, git.ErrNotGit); got != tt.wantNoGit {
				t.Errorf("errors.Is(%v, git.ErrNotGit): got %v, want %v", err, got, tt.wantNoGit)
			}
			if got := errors.As(err, &se); got == tt.wantNoGit {
				t.Errorf("errors.As(%v, *SetupError): got %v, want %v", err, got, !tt.wantNoGit)
			}
			if entries, _ := os.ReadDir(m.Root); len(entries) != 0 {
				t.Errorf("root after failed Add: got %d entries, want 0", len(entries))
			}
		})
	}
	if _, err := (&git.Git{}).TopLevel(t.Context(), t.TempDir()); !errors.Is(err, git.ErrNotGit) {
		t.Errorf("TopLevel of a plain dir: got %v, want git.ErrNotGit", err)
	}
}

// failingHooks installs hooks that leave a marker and fail, both via core.hooksPath and in
// .git/hooks, plus an fsmonitor that fails.
func failingHooks(t *testing.T, repo string) (marker string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("hook scripts need a POSIX shell")
	}
	marker = filepath.Join(t.TempDir(), "hook-ran")
	script := "#!/bin/sh\necho \"$0\" >> " + marker + "\nexit 1\n"
	hooks := t.TempDir()
	for _, dir := range []string{hooks, filepath.Join(repo, ".git", "hooks")} {
		for _, name := range []string{"post-checkout", "pre-commit", "post-commit", "reference-transaction", "post-index-change"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	fsmon := filepath.Join(hooks, "fsmonitor")
	if err := os.WriteFile(fsmon, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "config", "core.hooksPath", hooks)
	gitT(t, repo, "config", "core.fsmonitor", fsmon)
	return marker
}

func TestFailingHooksDoNotRun(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	marker := failingHooks(t, repo)
	// Prove the hooks would bite a plain git call.
	probe := filepath.Join(t.TempDir(), "probe")
	if out, err := gitRaw(repo, "worktree", "add", "--detach", probe); err == nil {
		t.Fatalf("plain git worktree add succeeded despite a failing post-checkout hook:\n%s", out)
	} else {
		t.Logf("plain git worktree add: %v\n%s", err, out)
	}
	gitRaw(repo, "worktree", "remove", "--force", probe)
	gitT(t, repo, "worktree", "prune")
	os.Remove(marker)

	m := newManager(t)
	wt, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	g := &git.Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "f.txt"), "v2\n")
	after, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Compare(ctx, before, after); err != nil {
		t.Fatal(err)
	}
	if err := wt.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(marker); err == nil {
		t.Errorf("hooks ran:\n%s", data)
	}
}

func TestTouched(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n", "g.txt": "g\n"})
	m := newManager(t)
	wt, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wt.Remove(context.Background()) })
	writeFile(t, filepath.Join(wt.Path, "f.txt"), "v2\n")
	os.Remove(filepath.Join(wt.Path, "g.txt"))
	writeFile(t, filepath.Join(wt.Path, "notes.md"), "scratch\n")
	got, err := m.Touched(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	want := []git.FileChange{
		{Path: "f.txt", Status: "M", Added: 1, Deleted: 1},
		{Path: "g.txt", Status: "D", Deleted: 1},
		{Path: "notes.md", Status: "A", Added: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Touched:\ngot  %+v\nwant %+v", got, want)
	}
	if st := gitT(t, wt.Path, "diff", "--cached", "--name-only"); st != "" {
		t.Errorf("Touched staged files in the worktree: %q", st)
	}
}

func TestSweep(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	m := newManager(t)
	dead, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	reused, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	live, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Remove(context.Background()) })

	// A pid that certainly ended: a child we waited for.
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	rewriteOwner(t, dead, func(o *owner) { o.PID = child.Process.Pid; o.PIDStartTime = 1 })
	// Our own pid with another start time: the pid was reused by an unrelated process.
	if proc.Self().Start != 0 {
		rewriteOwner(t, reused, func(o *owner) { o.PIDStartTime++ })
	} else {
		reused = nil
	}
	foreign := filepath.Join(m.Root, "not-ours")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}

	// A fresh Manager, as after a restart.
	removed, err := (&Manager{Root: m.Root}).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Dir(dead.Path)}
	if reused != nil {
		want = append(want, filepath.Dir(reused.Path))
	}
	slices.Sort(want)
	slices.Sort(removed)
	if !slices.Equal(removed, want) {
		t.Errorf("removed: got %v, want %v", removed, want)
	}
	if got := worktreePaths(t, repo); !slices.Equal(got, []string{resolved(t, repo), live.Path}) {
		t.Errorf("worktrees after Sweep: got %v, want main and the live one", got)
	}
	for _, keep := range []string{live.Path, foreign} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("Sweep removed %s: %v", keep, err)
		}
	}
}

func rewriteOwner(t *testing.T, wt *Worktree, edit func(*owner)) {
	t.Helper()
	p := filepath.Join(filepath.Dir(wt.Path), "owner.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var o owner
	if err := json.Unmarshal(data, &o); err != nil {
		t.Fatal(err)
	}
	edit(&o)
	if data, err = json.Marshal(o); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRef(t *testing.T) {
	repo := newRepo(t, nil)
	out := filepath.Join(t.TempDir(), "out")
	tests := []struct {
		ref  string
		want bool
	}{
		{"HEAD", true},
		{"refs/heads/main", true},
		{"-x", false},
		{"--output=" + out, false},
		{"", false},
		{"a b", false},
		{"a\nb", false},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			err := git.ValidateRef(tt.ref)
			if got := err == nil; got != tt.want {
				t.Errorf("git.ValidateRef(%q): got %v, want ok=%v", tt.ref, err, tt.want)
			}
			if tt.want {
				return
			}
			if !errors.Is(err, git.ErrBadRef) {
				t.Errorf("got %v, want git.ErrBadRef", err)
			}
			if _, err := (&git.Git{}).ResolveCommit(t.Context(), repo, tt.ref); !errors.Is(err, git.ErrBadRef) {
				t.Errorf("ResolveCommit(%q): got %v, want git.ErrBadRef", tt.ref, err)
			}
		})
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an option-looking ref reached git: %v", err)
	}
}

func TestGitErrorCarriesExitAndStderr(t *testing.T) {
	repo := newRepo(t, nil)
	_, err := (&git.Git{}).Run(t.Context(), git.Opts{Dir: repo}, "cat-file", "-t", "0000000000000000000000000000000000000000")
	var ge *git.GitError
	if !errors.As(err, &ge) {
		t.Fatalf("got %T %v, want *git.GitError", err, err)
	}
	if ge.ExitCode != 128 || !strings.Contains(ge.Stderr, "fatal") || ge.Args[0] != "cat-file" {
		t.Errorf("got exit %d stderr %q args %v", ge.ExitCode, ge.Stderr, ge.Args)
	}
	_, err = (&git.Git{Path: filepath.Join(t.TempDir(), "no-git")}).Run(t.Context(), git.Opts{Dir: repo}, "status")
	if !errors.As(err, &ge) || ge.ExitCode != -1 || ge.Err == nil {
		t.Errorf("missing git: got %v, want *git.GitError with exit -1 and a cause", err)
	}
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	other := newRepo(t, map[string]string{"other.txt": "x\n"})
	repo := newRepo(t, map[string]string{"mine.txt": "x\n"})
	g := &git.Git{Env: append(os.Environ(), "GIT_DIR="+filepath.Join(other, ".git"), "GIT_WORK_TREE="+other,
		"GIT_INDEX_FILE=/nonexistent", "LANG=de_DE.UTF-8")}
	top, err := g.TopLevel(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if top != resolved(t, repo) {
		t.Errorf("TopLevel with GIT_DIR of another repo in env: got %s, want %s", top, resolved(t, repo))
	}
}

func TestRootNotPrivateIsReportedAndLeftAlone(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no POSIX mode bits; the per-user temp dir is private")
	}
	m := newManager(t)
	if err := m.CheckRoot(); err != nil {
		t.Errorf("CheckRoot of a root that does not exist yet: got %v, want nil", err)
	}
	if err := os.MkdirAll(m.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(m.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	// A leftover a widened root would expose to the sweeper.
	leftover := filepath.Join(m.Root, "test-0123456789abcdef")
	if err := os.Mkdir(leftover, 0o700); err != nil {
		t.Fatal(err)
	}
	var se *SetupError
	if _, err := m.Add(t.Context(), newRepo(t, nil)); !errors.As(err, &se) || !strings.Contains(err.Error(), "0700") {
		t.Errorf("Add under a 0755 root: got %v, want a SetupError naming the mode", err)
	}
	if err := m.CheckRoot(); err == nil || !strings.Contains(err.Error(), "0700") {
		t.Errorf("CheckRoot: got %v, want an error naming the mode", err)
	}
	if _, err := m.Sweep(t.Context()); err == nil {
		t.Errorf("Sweep under a 0755 root: got nil, want the root reported")
	}
	if fi, err := os.Stat(m.Root); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("root mode: got %v (%v), want it left at 0755", fi.Mode().Perm(), err)
	}
	if _, err := os.Stat(leftover); err != nil {
		t.Errorf("an entry under an untrusted root was touched: %v", err)
	}
	if entries, _ := os.ReadDir(m.Root); len(entries) != 1 {
		t.Errorf("root entries: got %d, want only the leftover", len(entries))
	}
}

func TestOpenLinkedWorktree(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	m := newManager(t)
	wt, err := m.Add(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wt.Remove(context.Background()) })
	g := &git.Git{}
	main, err := g.Open(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	common := filepath.Join(resolved(t, repo), ".git")
	if main.Top != resolved(t, repo) || main.GitDir != common || main.CommonDir != common {
		t.Errorf("main layout: got %+v, want top %s and git dirs %s", main, resolved(t, repo), common)
	}
	linked, err := g.Open(ctx, wt.Path)
	if err != nil {
		t.Fatal(err)
	}
	if linked.Top != wt.Path || linked.CommonDir != common || filepath.Dir(linked.GitDir) != filepath.Join(common, "worktrees") {
		t.Errorf("linked layout: got %+v, want top %s, common %s, git dir under %s/worktrees", linked, wt.Path, common, common)
	}
	if _, err := g.Open(ctx, t.TempDir()); !errors.Is(err, git.ErrNotGit) {
		t.Errorf("Open of a plain dir: got %v, want git.ErrNotGit", err)
	}
}
