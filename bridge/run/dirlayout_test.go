package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// openCounter is a Git whose Open finds the repository at top and counts its calls.
type openCounter struct {
	Git
	top   string
	opens int
}

func (g *openCounter) Open(_ context.Context, dir string) (git.Repo, error) {
	g.opens++
	d := filepath.Join(g.top, ".git")
	return git.Repo{Top: g.top, GitDir: d, CommonDir: d}, nil
}

// age dates paths an hour back, out of racyLayout.
func age(t *testing.T, paths ...string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, p := range paths {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// A directory's layout is read once while nothing it came from changes; a new entry in a
// directory between the call's directory and the top, an edit of the git config, or a layout
// read just after a change make the next call ask git again.
func TestDirLayoutsReuse(t *testing.T) {
	top := t.TempDir()
	sub, dotgit := filepath.Join(top, "a", "b"), filepath.Join(top, ".git")
	for _, d := range []string{sub, dotgit} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dotgit, "config")
	if err := os.WriteFile(config, []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	everything := []string{sub, filepath.Dir(sub), top, dotgit, config}
	age(t, everything...)
	g := &openCounter{top: top}
	var l dirLayouts
	opens := func(want int, why string) {
		t.Helper()
		r := l.open(t.Context(), g, sub)
		if r == nil || r.Top != top {
			t.Fatalf("%s: got layout %+v", why, r)
		}
		if g.opens != want {
			t.Fatalf("%s: git was asked %d times, want %d", why, g.opens, want)
		}
	}
	opens(1, "first call")
	opens(1, "nothing changed")

	if err := os.Mkdir(filepath.Join(top, "a", "new"), 0o755); err != nil { // a's mtime changes
		t.Fatal(err)
	}
	opens(2, "a directory on the way up changed")
	opens(3, "read just after the change: not kept")
	age(t, everything...)
	opens(4, "aged")
	opens(4, "aged, unchanged")

	if err := os.WriteFile(config, []byte("[core]\n\tworktree = /elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	age(t, config)
	opens(5, "the git config changed")
	if err := os.Remove(filepath.Join(top, "a", "new")); err != nil {
		t.Fatal(err)
	}
	age(t, everything...)
	opens(6, "a removal")
	opens(6, "unchanged again")
}
