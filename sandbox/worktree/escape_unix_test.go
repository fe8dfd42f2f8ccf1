//go:build unix

package worktree

import (
	"context"
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

// trap is a host marker file and a script that creates it, then behaves like cat.
type trap struct{ marker, script string }

func newTrap(t *testing.T) trap {
	t.Helper()
	dir := t.TempDir()
	tr := trap{marker: filepath.Join(dir, "pwned"), script: filepath.Join(dir, "hostile.sh")}
	body := "#!/bin/sh\necho \"$0 $*\" >> " + tr.marker + "\nif [ $# -gt 0 ] && [ -f \"$1\" ]; then cat \"$1\"; else cat; fi\n"
	if err := os.WriteFile(tr.script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return tr
}

func (tr trap) sprung() bool { _, err := os.Stat(tr.marker); return err == nil }

func (tr trap) reset(t *testing.T) {
	t.Helper()
	if !tr.sprung() {
		t.Fatal("the trap did not spring for plain git: the attack is not live, the test proves nothing")
	}
	os.Remove(tr.marker)
}

// config is git config that runs the trap from every place a repository's config can name a
// program.
func (tr trap) config() string {
	return "[core]\n\tfsmonitor = " + tr.script + "\n\tpager = " + tr.script + "\n\thooksPath = " + filepath.Dir(tr.script) + "\n" +
		"[filter \"evil\"]\n\tclean = " + tr.script + "\n\tsmudge = " + tr.script + "\n\trequired = true\n" +
		"[diff \"evil\"]\n\ttextconv = " + tr.script + "\n\tcommand = " + tr.script + "\n" +
		"[diff]\n\texternal = " + tr.script + "\n"
}

// plant makes dir a hostile git dir.
func (tr trap) plant(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"objects", "refs/heads", "info"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(dir, "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"+tr.config())
	writeFile(t, filepath.Join(dir, "info", "attributes"), "* filter=evil diff=evil\n")
}

// naive runs git the way the evidence path did before the trust boundary: discovered from dir.
func naive(dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+filepath.Join(os.TempDir(), "cline-mcp-naive-"+randomHex(4)))
	_ = cmd.Run()
	os.Remove(strings.TrimPrefix(cmd.Env[len(cmd.Env)-1], "GIT_INDEX_FILE="))
}

func TestEscapeNestedRepoInApplyCwd(t *testing.T) {
	ctx := t.Context()
	tr := newTrap(t)
	repo := newRepo(t, map[string]string{"README.md": "hi\n", "sub/keep.txt": "keep\n"})
	sub := filepath.Join(repo, "sub")
	g := &Git{}
	before, err := g.Evidence(ctx, sub) // apply_cline_edits with cwd = a subdirectory
	if err != nil {
		t.Fatal(err)
	}
	// The run: a repository in cwd whose filters run the trap.
	tr.plant(t, filepath.Join(sub, ".git"))
	writeFile(t, filepath.Join(sub, ".gitattributes"), "* filter=evil diff=evil\n")
	writeFile(t, filepath.Join(sub, "payload.txt"), "data\n")
	naive(sub, "add", "-A")
	tr.reset(t)

	_, c, paths := inspectTrapped(t, g, before, tr)
	if want := []string{"sub/.gitattributes:A", "sub/payload.txt:A"}; !slices.Equal(paths, want) {
		t.Errorf("changed files: got %v, want %v (the nested .git is never part of the diff)", paths, want)
	}
	if strings.Contains(c.Diff, "hostile") || strings.Contains(c.Diff, "[filter") {
		t.Errorf("the nested .git leaked into the diff:\n%s", c.Diff)
	}
}

func TestEscapeNewNestedRepository(t *testing.T) {
	ctx := t.Context()
	tr := newTrap(t)
	repo := newRepo(t, map[string]string{"README.md": "hi\n", ".gitignore": "*.log\n"})
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	// A new directory with its own .git: git itself would treat it as a nested repository
	// (and `git add` would read its HEAD through whatever its .git points at).
	nested := filepath.Join(repo, "vendor", "lib")
	tr.plant(t, filepath.Join(nested, ".git"))
	writeFile(t, filepath.Join(nested, ".gitattributes"), "* filter=evil diff=evil\n")
	writeFile(t, filepath.Join(nested, "code.go"), "package lib\n")
	writeFile(t, filepath.Join(nested, "build.log"), "ignored\n")
	if err := os.Symlink("/etc/hostname", filepath.Join(nested, "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(nested, "deeper", ".git"), "gitdir: "+filepath.Join(nested, ".git")+"\n")
	naive(nested, "add", "-A")
	tr.reset(t)

	after, c, paths := inspectTrapped(t, g, before, tr)
	if want := []string{"vendor/lib/.gitattributes:A", "vendor/lib/code.go:A", "vendor/lib/link:A"}; !slices.Equal(paths, want) {
		t.Errorf("changed files: got %v, want %v (ordinary files, ignore rules applied, no .git)", paths, want)
	}
	if !slices.Equal(after.Nested, []string{"vendor/lib"}) || !strings.Contains(strings.Join(c.Warnings, "\n"), `nested git repository appeared at "vendor/lib"`) {
		t.Errorf("nested repo not reported: nested %v warnings %q", after.Nested, c.Warnings)
	}
	if !strings.Contains(c.Diff, "+/etc/hostname") || strings.Contains(c.Diff, "Subproject") {
		t.Errorf("diff:\n%s\nwant the link as a link and no gitlink", c.Diff)
	}
}

func TestEscapeRepoConfigInHostMode(t *testing.T) {
	ctx := t.Context()
	tr := newTrap(t)
	repo := newRepo(t, map[string]string{"README.md": "hi\n"})
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	// In host mode Cline can write .git/config: drivers, fsmonitor, pager, hooks, and attributes
	// that route every file through them.
	f, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(tr.config())
	f.Close()
	writeFile(t, filepath.Join(repo, ".git", "info", "attributes"), "* filter=evil diff=evil\n")
	writeFile(t, filepath.Join(repo, ".gitattributes"), "* filter=evil diff=evil\n")
	writeFile(t, filepath.Join(repo, "README.md"), "hi\nchanged by the run\n")
	naive(repo, "diff")
	tr.reset(t)
	naive(repo, "add", "-A")
	tr.reset(t)

	_, c, _ := inspectTrapped(t, g, before, tr)
	if !strings.Contains(c.Diff, "+changed by the run") {
		t.Errorf("diff lacks the run's edit as it is on disk:\n%s", c.Diff)
	}
}

func TestEscapeWorkspaceRedirects(t *testing.T) {
	for _, what := range []string{"gitfile", "commondir", "gitdir"} {
		t.Run(what, func(t *testing.T) {
			ctx := t.Context()
			tr := newTrap(t)
			repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
			m := newManager(t)
			wt, err := m.Add(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			planted := filepath.Join(wt.Path, ".evil-git")
			tr.plant(t, planted)
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
				naive(wt.Path, "add", "-A")
				tr.reset(t)
			}

			files, err := m.Touched(ctx, wt)
			if err != nil {
				t.Fatal(err)
			}
			if err := wt.Remove(ctx); err != nil {
				t.Fatal(err)
			}
			if tr.sprung() {
				t.Fatalf("host git ran a program the run configured: %s", readMarker(tr))
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

func TestEscapeSymlinkToHostFile(t *testing.T) {
	ctx := t.Context()
	const secret = "HOST-SECRET-4c1d"
	hostDir := t.TempDir()
	writeFile(t, filepath.Join(hostDir, "secret.txt"), secret+"\n")
	repo := newRepo(t, map[string]string{"README.md": "hi\n", "docs/a.md": "a\n"})
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(hostDir, "secret.txt"), filepath.Join(repo, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	// A tracked directory replaced by a link to a host directory.
	if err := os.RemoveAll(filepath.Join(repo, "docs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostDir, filepath.Join(repo, "docs")); err != nil {
		t.Fatal(err)
	}
	after, err := g.Inspect(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Compare(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Diff, secret) {
		t.Fatalf("a host file's content is in the diff:\n%s", c.Diff)
	}
	got := map[string]string{}
	for _, f := range c.ChangedFiles {
		got[f.Path] = f.Status
	}
	want := map[string]string{"leak.txt": "A", "docs": "A", "docs/a.md": "D"}
	if len(got) != len(want) || got["leak.txt"] != "A" || got["docs/a.md"] != "D" {
		t.Errorf("changed files: got %v, want %v", got, want)
	}
	if !strings.Contains(c.Diff, "+"+filepath.Join(hostDir, "secret.txt")) || !strings.Contains(c.Diff, "new file mode 120000") {
		t.Errorf("the links are not in the diff as links:\n%s", c.Diff)
	}
}

func TestEscapeWeirdFileNames(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"README.md": "hi\n"})
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "written-by-git")
	names := []string{"-n", "--output=" + filepath.Base(outside), "new\nline.txt", "tab\tname.txt", "ctrl\x01name.txt", `quote"name.txt`, "space name.txt", "ünïcödé.txt"}
	for _, n := range names {
		writeFile(t, filepath.Join(repo, n), "one line\n")
	}
	writeFile(t, filepath.Join(repo, "-dir", "--x"), "x\n")
	after, err := g.Inspect(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Compare(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range c.ChangedFiles {
		if f.Status != "A" || f.Added != 1 {
			t.Errorf("%q: got status %s +%d, want A +1", f.Path, f.Status, f.Added)
		}
		got = append(got, f.Path)
	}
	want := append(slices.Clone(names), "-dir/--x")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("changed files:\ngot  %q\nwant %q", got, want)
	}
	for _, s := range []string{`"b/new\nline.txt"`, `"b/tab\tname.txt"`, `"b/ctrl\001name.txt"`, "b/-n", "b/--output="} {
		if !strings.Contains(c.Diff, s) {
			t.Errorf("diff lacks %s:\n%s", s, c.Diff)
		}
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("a file name was read as an option")
	}
}

// inspectTrapped runs Inspect and Compare after an attack, fails if the trap sprang, and returns
// the snapshot, the change and its files as "path:status".
func inspectTrapped(t *testing.T, g *Git, before Evidence, tr trap) (Evidence, Change, []string) {
	t.Helper()
	after, err := g.Inspect(t.Context(), before)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Compare(t.Context(), before, after)
	if err != nil {
		t.Fatal(err)
	}
	if tr.sprung() {
		t.Fatalf("host git ran a program the run configured: %s", readMarker(tr))
	}
	var paths []string
	for _, f := range c.ChangedFiles {
		paths = append(paths, f.Path+":"+f.Status)
	}
	return after, c, paths
}

func readMarker(tr trap) string {
	b, _ := os.ReadFile(tr.marker)
	return string(b)
}
