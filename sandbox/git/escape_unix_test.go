//go:build unix

package git

import (
	"github.com/cline-mcp/cline-mcp/internal/gitfixture"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Escape tests of the git trust boundary (Inspect, Compare, Touched, Remove): a run leaves
// behind what would make a naive host git execute a program or touch another worktree. Each
// test first proves the trap is live — plain git, as this package used to run it, springs it —
// and then that the boundary does not.

func TestEscapeNestedRepoInApplyCwd(t *testing.T) {
	ctx := t.Context()
	tr := gitfixture.NewTrap(t)
	repo := newRepo(t, map[string]string{"README.md": "hi\n", "sub/keep.txt": "keep\n"})
	sub := filepath.Join(repo, "sub")
	g := &Git{}
	before, err := g.Evidence(ctx, sub) // apply_cline_edits with cwd = a subdirectory
	if err != nil {
		t.Fatal(err)
	}
	// The run: a repository in cwd whose filters run the trap.
	tr.Plant(t, filepath.Join(sub, ".git"))
	writeFile(t, filepath.Join(sub, ".gitattributes"), "* filter=evil diff=evil\n")
	writeFile(t, filepath.Join(sub, "payload.txt"), "data\n")
	gitfixture.Naive(sub, "add", "-A")
	tr.Reset(t)

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
	tr := gitfixture.NewTrap(t)
	repo := newRepo(t, map[string]string{"README.md": "hi\n", ".gitignore": "*.log\n"})
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	// A new directory with its own .git: git itself would treat it as a nested repository
	// (and `git add` would read its HEAD through whatever its .git points at).
	nested := filepath.Join(repo, "vendor", "lib")
	tr.Plant(t, filepath.Join(nested, ".git"))
	writeFile(t, filepath.Join(nested, ".gitattributes"), "* filter=evil diff=evil\n")
	writeFile(t, filepath.Join(nested, "code.go"), "package lib\n")
	writeFile(t, filepath.Join(nested, "build.log"), "ignored\n")
	if err := os.Symlink("/etc/hostname", filepath.Join(nested, "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(nested, "deeper", ".git"), "gitdir: "+filepath.Join(nested, ".git")+"\n")
	gitfixture.Naive(nested, "add", "-A")
	tr.Reset(t)

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
	tr := gitfixture.NewTrap(t)
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
	f.WriteString(tr.Config())
	f.Close()
	writeFile(t, filepath.Join(repo, ".git", "info", "attributes"), "* filter=evil diff=evil\n")
	writeFile(t, filepath.Join(repo, ".gitattributes"), "* filter=evil diff=evil\n")
	writeFile(t, filepath.Join(repo, "README.md"), "hi\nchanged by the run\n")
	gitfixture.Naive(repo, "diff")
	tr.Reset(t)
	gitfixture.Naive(repo, "add", "-A")
	tr.Reset(t)

	_, c, _ := inspectTrapped(t, g, before, tr)
	if !strings.Contains(c.Diff, "+changed by the run") {
		t.Errorf("diff lacks the run's edit as it is on disk:\n%s", c.Diff)
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
func inspectTrapped(t *testing.T, g *Git, before Evidence, tr gitfixture.Trap) (Evidence, Change, []string) {
	t.Helper()
	after, err := g.Inspect(t.Context(), before)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Compare(t.Context(), before, after)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Sprung() {
		t.Fatalf("host git ran a program the run configured: %s", tr.Read())
	}
	var paths []string
	for _, f := range c.ChangedFiles {
		paths = append(paths, f.Path+":"+f.Status)
	}
	return after, c, paths
}
