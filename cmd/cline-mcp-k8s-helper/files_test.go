//go:build linux

package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

type ent struct {
	name string
	typ  byte
	body string
	link string
}

func tarOf(t *testing.T, ents ...ent) *tar.Reader {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o640, Size: int64(len(e.body))}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return tar.NewReader(&b)
}

// TestUntar: directories, files and links unpack with their modes; a link is made, never
// followed.
func TestUntar(t *testing.T) {
	dir := t.TempDir()
	err := untar(tarOf(t, ent{"./", tar.TypeDir, "", ""}, ent{"./src/", tar.TypeDir, "", ""},
		ent{"./src/a.go", tar.TypeReg, "package a\n", ""}, ent{"./etc", tar.TypeSymlink, "", "/etc"},
		ent{"./p", tar.TypeFifo, "", ""}), dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "src/a.go")); string(b) != "package a\n" {
		t.Errorf("src/a.go: got %q", b)
	}
	if fi, err := os.Stat(filepath.Join(dir, "src/a.go")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("src/a.go mode: got %v, %v; want 0640", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "etc")); err != nil || l != "/etc" {
		t.Errorf("etc: got %q, %v; want the link", l, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "p")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a FIFO was made: %v", err)
	}
}

// TestUntarRefuses: names outside the directory and names below a link of the archive stop the
// unpacking; nothing lands outside the directory.
func TestUntarRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		ents []ent
	}{
		{"dot-dot", []ent{{"./../escape", tar.TypeReg, "x", ""}}},
		{"dot-dot inside", []ent{{"./a/../../escape", tar.TypeReg, "x", ""}}},
		{"absolute", []ent{{"/escape", tar.TypeReg, "x", ""}}},
		{"below a link", []ent{{"./out", tar.TypeSymlink, "", ".."}, {"./out/escape", tar.TypeReg, "x", ""}}},
		{"over a link", []ent{{"./escape", tar.TypeSymlink, "", "../escape"}, {"./escape", tar.TypeReg, "x", ""}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "d")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := untar(tarOf(t, tt.ents...), dir); err == nil {
				t.Error("got no error, want the archive refused")
			}
			if _, err := os.Lstat(filepath.Join(root, "escape")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("something landed outside: %v", err)
			}
		})
	}
}

func names(t *testing.T, r io.Reader) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

// TestWriteTar: a directory becomes "./" entries (files, directories, links as links; FIFOs
// stay out), a file one entry under its name, a missing path an empty archive.
func TestWriteTar(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src/a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "root")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeTar(&b, dir); err != nil {
		t.Fatal(err)
	}
	got := names(t, &b)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"./", "./root", "./src/", "./src/a.go"}; !slices.Equal(keys, want) {
		t.Errorf("got entries %v, want %v", keys, want)
	}
	if h := got["./root"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/" {
		t.Errorf("the link: got %+v, want a link to /", h)
	}
	b.Reset()
	if err := writeTar(&b, filepath.Join(dir, "src/a.go")); err != nil {
		t.Fatal(err)
	}
	if got := names(t, &b); len(got) != 1 || got["a.go"] == nil || got["a.go"].Size != 10 {
		t.Errorf("a file: got %v, want one entry a.go", got)
	}
	b.Reset()
	if err := writeTar(&b, filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	if got := names(t, &b); len(got) != 0 {
		t.Errorf("a missing path: got %v, want an empty archive", got)
	}
}
