package git

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// binaryBytes holds a NUL and bytes that are not UTF-8: git treats the file as binary, and a
// text diff would show only "Binary files … differ".
var binaryBytes = "\x00\x01\xff\xfe binary\x00\n"

// TestBinaryPatchRoundTrip: the edits of a run (text and binary changes, a new binary file, a
// deletion, an executable bit) recorded by BinaryPatch apply to a clone at the base commit with
// ApplyPatch, staged, and the clone's files are then byte for byte the edited ones.
func TestBinaryPatchRoundTrip(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"a.txt": "one\ntwo\n", "img.bin": binaryBytes, "gone.txt": "bye\n", "run.sh": "echo\n"})
	clone := filepath.Join(t.TempDir(), "clone")
	gitT(t, "", "clone", "-q", repo, clone)
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a.txt": "one\nTWO\n", "img.bin": binaryBytes + "\x00more\xff", "new/pic.bin": "\x89PNG\x00\x00\x01"}
	for name, content := range want {
		writeFile(t, filepath.Join(repo, name), content)
	}
	if err := os.Remove(filepath.Join(repo, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	exec := runtime.GOOS != "windows" // no executable bit there
	if exec {
		if err := os.Chmod(filepath.Join(repo, "run.sh"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	after, err := g.Inspect(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	p, truncated, err := g.BinaryPatch(ctx, before, after, MaxDiffBytes)
	if err != nil || truncated {
		t.Fatalf("BinaryPatch: %v truncated=%v", err, truncated)
	}
	if !bytes.Contains(p.Body, []byte("GIT binary patch")) {
		t.Fatalf("the patch carries no binary patch:\n%s", p.Body)
	}
	parsed, err := ParsePatch([]byte(p.Format()))
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Base != gitT(t, clone, "rev-parse", "HEAD") {
		t.Fatalf("base %s is not the clone's HEAD", parsed.Base)
	}
	if _, err := g.ApplyPatch(ctx, clone, parsed, ApplyOptions{CheckOnly: true}); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, clone, "status", "--porcelain"); got != "" {
		t.Fatalf("a check-only apply changed the clone:\n%s", got)
	}
	files, err := g.ApplyPatch(ctx, clone, parsed, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[bool]int{true: 5, false: 4}[exec]; len(files) != want {
		t.Errorf("ApplyPatch reported %d files, want %d: %+v", len(files), want, files)
	}
	for name, content := range want {
		if got, err := os.ReadFile(filepath.Join(clone, name)); err != nil || string(got) != content {
			t.Errorf("%s after apply: %q, %v; want %q", name, got, err, content)
		}
	}
	if _, err := os.Lstat(filepath.Join(clone, "gone.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("gone.txt was not deleted: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(clone, "run.sh")); exec && (err != nil || fi.Mode()&0o100 == 0) {
		t.Errorf("run.sh did not become executable: %v", err)
	}
	if got := gitT(t, clone, "diff", "--stat"); got != "" {
		t.Errorf("the index does not hold the applied change (apply --index): %s", got)
	}
}

// TestApplyPatchBaseMismatch: a patch made on another commit is refused before git sees it,
// and the checkout is untouched.
func TestApplyPatchBaseMismatch(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "one\n"})
	base := gitT(t, repo, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(repo, "a.txt"), "two\n")
	gitT(t, repo, "commit", "-qam", "second")
	p := Patch{Base: base, Body: []byte("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+three\n")}
	_, err := (&Git{}).ApplyPatch(context.Background(), repo, p, ApplyOptions{})
	if !errors.Is(err, ErrBaseMismatch) || !strings.Contains(err.Error(), base) {
		t.Fatalf("err = %v, want the base mismatch naming %s", err, base)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(got) != "two\n" {
		t.Fatalf("a.txt changed: %q", got)
	}
}

// TestParsePatchRefusesCutShort: a patch whose diff is shorter than its header says (a result
// cut on the way) is refused; git apply alone would apply its first files.
func TestParsePatchRefusesCutShort(t *testing.T) {
	full := Patch{Base: strings.Repeat("a", 40), Body: []byte("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")}.Format()
	if _, err := ParsePatch([]byte(full)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{full[:len(full)-3], "diff --git a/x b/x\n", strings.Replace(full, "base: a", "base: A", 1)} {
		if _, err := ParsePatch([]byte(bad)); !errors.Is(err, ErrPatchRefused) {
			t.Errorf("ParsePatch(%q) = %v, want refused", bad, err)
		}
	}
}

// FuzzCheckPatch: no input makes ParsePatch or CheckPatch panic, and a path checkPatchPath
// accepts stays below the work tree once joined to it (path.Join cleans any ..), never is or
// passes through .git in any case, and holds no NUL.
func FuzzCheckPatch(f *testing.F) {
	f.Add([]byte("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"))
	f.Add([]byte("diff --git \"a/\\056\\056/q\" \"b/\\056\\056/q\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/\\056\\056/q\"\n"))
	f.Add([]byte("diff --git a/l b/l\nnew file mode 120000\nindex 0..1 120000\n"))
	f.Add([]byte(Patch{Base: strings.Repeat("a", 40), Body: []byte("diff --git a/x b/x\n")}.Format()))
	f.Add([]byte("sub/../../.GIT/config"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = ParsePatch(data)
		_ = CheckPatch(data)
		p := string(data)
		if checkPatchPath(p) != nil {
			return
		}
		joined := path.Join("/top", p)
		if !strings.HasPrefix(joined, "/top/") || strings.ContainsRune(p, 0) {
			t.Fatalf("accepted %q, which joins to %q", p, joined)
		}
		for _, c := range strings.Split(strings.ToLower(joined), "/") {
			if strings.TrimRight(c, ". ") == ".git" {
				t.Fatalf("accepted %q, which reaches .git", p)
			}
		}
	})
}

// TestApplyPatchOnUncommittedWork: a patch made on top of uncommitted work (a bundle with a
// snapshot) applies with Unstaged to a checkout holding the same work; with the index (the
// default) git refuses it, since the index does not hold that work, and nothing changes.
func TestApplyPatchOnUncommittedWork(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"a.txt": "one\n"})
	writeFile(t, filepath.Join(repo, "a.txt"), "one\nmine\n")
	clone := filepath.Join(t.TempDir(), "clone")
	gitT(t, "", "clone", "-q", repo, clone)
	writeFile(t, filepath.Join(clone, "a.txt"), "one\nmine\n")
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "a.txt"), "one\nmine\nthe run's\n")
	after, err := g.Inspect(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := g.BinaryPatch(ctx, before, after, MaxDiffBytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ApplyPatch(ctx, clone, p, ApplyOptions{}); !errors.Is(err, ErrPatchDoesNotApply) {
		t.Fatalf("with the index: %v, want does not apply", err)
	}
	if _, err := g.ApplyPatch(ctx, clone, p, ApplyOptions{Unstaged: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(clone, "a.txt")); string(got) != "one\nmine\nthe run's\n" {
		t.Fatalf("a.txt: %q", got)
	}
	if got := gitT(t, clone, "diff", "--cached", "--name-only"); got != "" {
		t.Fatalf("Unstaged staged %s", got)
	}
}
