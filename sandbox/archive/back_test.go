package archive

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testStage is a Stage in a temp dir of the test, closed at its end.
func testStage(t testing.TB) *Stage {
	t.Helper()
	s, err := NewStage(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// limits are DefaultLimits changed by set.
func limits(set func(*Limits)) Limits {
	l := DefaultLimits
	set(&l)
	return l
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ent is one entry of a test archive.
type ent struct {
	name string
	typ  byte
	body string
	link string
	mode int64
}

func archive(t *testing.T, ents ...ent) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range ents {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: mode, Size: int64(len(e.body)), Format: tar.FormatPAX}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &b
}

func dir(name string) ent              { return ent{name: name, typ: tar.TypeDir, mode: 0o755} }
func file(name, body string) ent       { return ent{name: name, typ: tar.TypeReg, body: body} }
func symlink(name, target string) ent  { return ent{name: name, typ: tar.TypeSymlink, link: target} }
func hardlink(name, target string) ent { return ent{name: name, typ: tar.TypeLink, link: target} }

// TestReadBackRefusesHostileArchives: every archive breaks one rule, and is refused as a whole.
// The checkout (and the directory beside it) stay exactly as they were.
func TestReadBackRefusesHostileArchives(t *testing.T) {
	tests := []struct {
		name string
		ents []ent
	}{
		{"dot-dot", []ent{dir("repo/"), file("repo/../escape.txt", "x")}},
		{"dot-dot inside", []ent{dir("repo/"), dir("repo/a/"), file("repo/a/../../escape.txt", "x")}},
		{"absolute name", []ent{dir("repo/"), file("/etc/cron.d/x", "x")}},
		{"another root", []ent{dir("repo/"), file("other/x.txt", "x")}},
		{"first entry not the root", []ent{file("repo/x.txt", "x")}},
		{"first entry a file named like the root", []ent{file("repo", "x")}},
		{"below a symlink of the archive", []ent{dir("repo/"), symlink("repo/out", "/tmp"), file("repo/out/x.txt", "x")}},
		{"below a relative symlink", []ent{dir("repo/"), dir("repo/real/"), symlink("repo/alias", "real"), file("repo/alias/x.txt", "x")}},
		{"below a file", []ent{dir("repo/"), file("repo/f", "x"), file("repo/f/x.txt", "x")}},
		{"parent never sent", []ent{dir("repo/"), file("repo/missing/x.txt", "x")}},
		{"duplicate", []ent{dir("repo/"), file("repo/x.txt", "a"), symlink("repo/x.txt", "/etc/passwd")}},
		{"fifo", []ent{dir("repo/"), {name: "repo/p", typ: tar.TypeFifo}}},
		{"char device", []ent{dir("repo/"), {name: "repo/null", typ: tar.TypeChar}}},
		{"block device", []ent{dir("repo/"), {name: "repo/sda", typ: tar.TypeBlock}}},
		{"hard link to something not in the archive", []ent{dir("repo/"), hardlink("repo/h", "/etc/passwd")}},
		{"hard link out of the root", []ent{dir("repo/"), hardlink("repo/h", "repo/../x")}},
		{"hard link to a later entry", []ent{dir("repo/"), hardlink("repo/h", "repo/later"), file("repo/later", "x")}},
		{"empty symlink", []ent{dir("repo/"), symlink("repo/l", "")}},
		{"podman style with dot-dot", []ent{dir("/"), file("/../x", "x")}},
		{"empty archive", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			repo := filepath.Join(root, "repo")
			writeTestFile(t, filepath.Join(repo, "keep.txt"), "keep")
			man := Manifest{"keep.txt": {kind: 'f', mode: 0o644, size: 4, sum: sha256.Sum256([]byte("keep"))}}
			_, err := ReadBack(archive(t, tt.ents...), "repo", man, func(string) bool { return false }, testStage(t), DefaultLimits)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("got %v, want the archive refused", err)
			}
			entries, _ := os.ReadDir(root)
			if len(entries) != 1 || readTestFile(t, filepath.Join(repo, "keep.txt")) != "keep" {
				t.Errorf("the host changed: %v", entries)
			}
		})
	}
}

func readTestFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestReadBackLimits(t *testing.T) {
	big := strings.Repeat("x", 1000)
	tests := []struct {
		name string
		lim  Limits
		ents []ent
	}{
		{"entries", limits(func(l *Limits) { l.Entries, l.Read, l.Staged = 3, 1<<20, 1<<20 }), []ent{dir("repo/"), file("repo/a", "a"), file("repo/b", "b"), file("repo/c", "c")}},
		{"bytes", limits(func(l *Limits) { l.Entries, l.Read, l.Staged = 100, 1500, 1<<20 }), []ent{dir("repo/"), file("repo/a", big), file("repo/b", big)}},
		{"changed bytes", limits(func(l *Limits) { l.Entries, l.Read, l.Staged = 100, 1<<20, 1500 }), []ent{dir("repo/"), file("repo/a", big), file("repo/b", big)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadBack(archive(t, tt.ents...), "repo", Manifest{}, func(string) bool { return false }, testStage(t), tt.lim)
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("got %v, want the archive refused for its %s", err, tt.name)
			}
		})
	}
}

// TestCopyBackApplies: a valid archive in Docker's and Podman's naming changes exactly what the
// run changed, never .git or a skipped path, and keeps what it did not change untouched.
func TestCopyBackApplies(t *testing.T) {
	for _, style := range []struct{ name, root, prefix string }{{"docker", "repo/", "repo/"}, {"podman", "/", "/"}} {
		t.Run(style.name, func(t *testing.T) {
			repo := filepath.Join(t.TempDir(), "repo")
			src := map[string]string{"keep.txt": "keep", "edit.txt": "old", "gone.txt": "bye", "d/x.txt": "x", ".git/HEAD": "ref", "other/mounted.txt": "m"}
			for p, c := range src {
				writeTestFile(t, filepath.Join(repo, p), c)
			}
			if err := os.Symlink("keep.txt", filepath.Join(repo, "link")); err != nil {
				t.Fatal(err)
			}
			man := Manifest{}
			skip := func(r string) bool { return HasGitPart(r) || Under([]string{"other"})(r) }
			var tw bytes.Buffer
			w := tar.NewWriter(&tw)
			if err := WriteTree(w, repo, Owner{1, 1}, Under([]string{"other"}), HasGitPart, man); err != nil {
				t.Fatal(err)
			}
			if _, ok := man[".git/HEAD"]; ok {
				t.Errorf("the manifest records .git, so a copy back could delete it")
			}
			keepInfo, _ := os.Stat(filepath.Join(repo, "keep.txt"))
			p := style.prefix
			a := archive(t,
				dir(style.root), file(p+"keep.txt", "keep"), file(p+"edit.txt", "new"), dir(p+"d/"),
				file(p+"new.txt", "created"), dir(p+".git/"), file(p+".git/HEAD", "hacked"),
				dir(p+"other/"), file(p+"other/mounted.txt", "hacked"), symlink(p+"link", "new.txt"),
				hardlink(p+"hard.txt", p+"keep.txt"),
				ent{name: p + "exec.sh", typ: tar.TypeReg, body: "#!", mode: 0o4755},
			)
			plan, err := ReadBack(a, "repo", man, skip, testStage(t), DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if err := plan.Apply(repo); err != nil {
				t.Fatal(err)
			}
			for p, want := range map[string]string{"keep.txt": "keep", "edit.txt": "new", "new.txt": "created", ".git/HEAD": "ref", "other/mounted.txt": "m", "hard.txt": "keep", "exec.sh": "#!"} {
				if got := readTestFile(t, filepath.Join(repo, p)); got != want {
					t.Errorf("%s: got %q, want %q", p, got, want)
				}
			}
			for _, p := range []string{"gone.txt", "d/x.txt"} {
				if _, err := os.Lstat(filepath.Join(repo, p)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s: got %v, want it deleted", p, err)
				}
			}
			if l, err := os.Readlink(filepath.Join(repo, "link")); err != nil || l != "new.txt" {
				t.Errorf("link: got %q %v, want new.txt", l, err)
			}
			if fi, err := os.Stat(filepath.Join(repo, "exec.sh")); err != nil || fi.Mode()&(os.ModeSetuid|0o022) != 0 || fi.Mode().Perm() != 0o755 {
				t.Errorf("exec.sh: got mode %v, want 0755 without setuid", fi.Mode())
			}
			if fi, _ := os.Stat(filepath.Join(repo, "keep.txt")); !os.SameFile(fi, keepInfo) || !fi.ModTime().Equal(keepInfo.ModTime()) {
				t.Errorf("keep.txt was rewritten although unchanged")
			}
		})
	}
}

// TestCopyBackRefusesHostSymlinkParent: the user replaced a directory by a symbolic link to a
// place outside the checkout during the run; nothing is written through it, nothing at all.
func TestCopyBackRefusesHostSymlinkParent(t *testing.T) {
	root := t.TempDir()
	repo, outside := filepath.Join(root, "repo"), filepath.Join(root, "outside")
	writeTestFile(t, filepath.Join(repo, "docs", "a.md"), "a")
	writeTestFile(t, filepath.Join(repo, "edit.txt"), "old")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	man := Manifest{}
	var b bytes.Buffer
	if err := WriteTree(tar.NewWriter(&b), repo, Owner{}, func(string) bool { return false }, nil, man); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(repo, "docs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo, "docs")); err != nil {
		t.Fatal(err)
	}
	a := archive(t, dir("repo/"), file("repo/edit.txt", "new"), dir("repo/docs/"), file("repo/docs/a.md", "a"), file("repo/docs/evil.md", "x"))
	plan, err := ReadBack(a, "repo", man, func(string) bool { return false }, testStage(t), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(repo); !errors.Is(err, ErrRefused) {
		t.Fatalf("got %v, want a refusal to write below the host's symbolic link", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the checkout: %v", entries)
	}
	if got := readTestFile(t, filepath.Join(repo, "edit.txt")); got != "old" {
		t.Errorf("edit.txt: got %q, want nothing applied", got)
	}
}

func TestReadOneFile(t *testing.T) {
	tests := []struct {
		name   string
		ents   []ent
		wantOK bool
		want   string
	}{
		{"regular", []ent{file("providers.json", "{}")}, true, "{}"},
		{"symlink", []ent{symlink("providers.json", "/etc/shadow")}, false, ""},
		{"directory", []ent{dir("providers.json/"), file("providers.json/x", "x")}, false, ""},
		{"fifo", []ent{{name: "providers.json", typ: tar.TypeFifo}}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, ok, err := ReadSingle(archive(t, tt.ents...))
			if err != nil || ok != tt.wantOK || string(data) != tt.want {
				t.Errorf("got %q %v %v, want %q %v", data, ok, err, tt.want, tt.wantOK)
			}
		})
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	_ = tw.WriteHeader(&tar.Header{Name: "providers.json", Typeflag: tar.TypeReg, Size: MaxReturnedFile + 1, Mode: 0o600})
	if _, _, err := ReadSingle(&b); !errors.Is(err, ErrRefused) {
		t.Errorf("an oversized file: got %v, want it refused", err)
	}
}

// TestManifestOfAfterCopyBack: once a copy back made the host tree match the container's, its
// ManifestOf is what the next copy back compares with: a file the first copy back created and
// the container then removed is deleted by the second, which the manifest of what first went
// in could not tell.
func TestManifestOfAfterCopyBack(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	writeTestFile(t, filepath.Join(repo, "keep.txt"), "keep")
	writeTestFile(t, filepath.Join(repo, ".git", "HEAD"), "ref")
	man := Manifest{}
	if err := WriteTree(tar.NewWriter(io.Discard), repo, Owner{}, Under(nil), HasGitPart, man); err != nil {
		t.Fatal(err)
	}
	if got, err := ManifestOf(repo, Under(nil), HasGitPart); err != nil || !maps.Equal(got, man) {
		t.Fatalf("ManifestOf: %v %v, want what WriteTree recorded %v", got, err, man)
	}
	back := func(man Manifest, a io.Reader) {
		t.Helper()
		plan, err := ReadBack(a, "repo", man, HasGitPart, testStage(t), DefaultLimits)
		if err == nil {
			err = plan.Apply(repo)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	back(man, archive(t, dir("repo/"), file("repo/keep.txt", "keep"), file("repo/new.txt", "created")))
	renewed, err := ManifestOf(repo, Under(nil), HasGitPart)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := renewed["new.txt"]; !ok {
		t.Fatalf("the renewed manifest lacks new.txt: %v", renewed)
	}
	back(renewed, archive(t, dir("repo/"), file("repo/keep.txt", "keep")))
	if _, err := os.Lstat(filepath.Join(repo, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt: got %v, want it deleted by the second copy back", err)
	}
	if readTestFile(t, filepath.Join(repo, ".git", "HEAD")) != "ref" {
		t.Error(".git was touched")
	}
}
