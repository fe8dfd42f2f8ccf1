package archive

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// upperBase writes the lower layer's tree (what the host sent) and returns its manifest.
func upperBase(t *testing.T) (string, Manifest) {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	for rel, body := range map[string]string{
		"d/a": "a", "d/b": "b", "e/c": "c", "e/sub/c2": "c2", "top": "top", "keep/x": "x", "f/y": "y",
	} {
		writeTestFile(t, filepath.Join(repo, rel), body)
	}
	man := Manifest{}
	tw := tar.NewWriter(io.Discard)
	if err := WriteTree(tw, repo, Owner{}, func(string) bool { return false }, nil, man); err != nil {
		t.Fatal(err)
	}
	return repo, man
}

func whiteout(name string) ent { return ent{name: name, typ: tar.TypeChar} }

// treeOf lists a tree as "rel" (directories "rel/", files "rel=content", links "rel->target").
func treeOf(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			out = append(out, rel+"/")
		case d.Type()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out = append(out, rel+"->"+l)
		default:
			out = append(out, rel+"="+readTestFile(t, p))
		}
		return nil
	})
	return out
}

// TestReadBackUpper: an overlay's upper directory as the kernel leaves it (a whiteout, whiteouts
// linked to one another, an opaque directory, a renamed directory copied whole, a directory
// replaced by a file, a new link) makes the checkout what the merged tree was, and only the
// directories both layers have are asked about.
func TestReadBackUpper(t *testing.T) {
	for _, opaque := range []bool{true, false} {
		repo, man := upperBase(t)
		var asked []string
		visible := func(rel string) (bool, error) {
			asked = append(asked, rel)
			return !opaque || rel[:2] != "e/", nil
		}
		up := archive(t,
			dir("u/"),
			dir("u/d/"), whiteout("u/d/a"),
			dir("u/e/"), file("u/e/n", "n"), hardlink("u/e/gone", "u/d/a"),
			file("u/top", "TOP"),
			dir("u/dd/"), file("u/dd/b", "b"),
			file("u/keep", "now a file"),
			symlink("u/lnk", "top"),
			whiteout("u/f"),
		)
		plan, err := ReadBackUpper(up, "u", man, func(string) bool { return false }, testStage(t), DefaultLimits, visible)
		if err != nil {
			t.Fatal(err)
		}
		if err := plan.Apply(repo); err != nil {
			t.Fatal(err)
		}
		want := []string{"d/", "d/b=b", "dd/", "dd/b=b", "e/", "e/n=n", "keep=now a file", "lnk->top", "top=TOP"}
		if !opaque {
			want = []string{"d/", "d/b=b", "dd/", "dd/b=b", "e/", "e/c=c", "e/n=n", "e/sub/", "e/sub/c2=c2", "keep=now a file", "lnk->top", "top=TOP"}
		}
		if got := treeOf(t, repo); !slices.Equal(got, want) {
			t.Errorf("opaque %v: the checkout is\n%q\nwant\n%q", opaque, got, want)
		}
		slices.Sort(asked)
		// d and e are directories of both layers; d's lower child b shows, e's c or sub.
		if len(asked) != 2 || asked[0][:2] != "d/" || asked[1][:2] != "e/" {
			t.Errorf("asked about %q, want one child of d and one of e", asked)
		}
	}
}

// TestReadBackUpperRefuses: outside the whiteouts an upper directory obeys ReadBack's rules, and
// a failing question refuses the copy back.
func TestReadBackUpperRefuses(t *testing.T) {
	_, man := upperBase(t)
	none := func(string) bool { return false }
	yes := func(string) (bool, error) { return true, nil }
	for name, ents := range map[string][]ent{
		"device 1/3":          {dir("u/"), {name: "u/null", typ: tar.TypeChar, mode: 0o666}},
		"below a whiteout":    {dir("u/"), whiteout("u/d"), file("u/d/x", "x")},
		"dot-dot":             {dir("u/"), file("u/../x", "x")},
		"link to a later one": {dir("u/"), hardlink("u/h", "u/w"), whiteout("u/w")},
	} {
		var up io.Reader = archive(t, ents...)
		if name == "device 1/3" {
			up = deviceArchive(t)
		}
		if _, err := ReadBackUpper(up, "u", man, none, testStage(t), DefaultLimits, yes); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: got %v, want refused", name, err)
		}
	}
	boom := errors.New("engine gone")
	up := archive(t, dir("u/"), dir("u/d/"), file("u/d/new", "n"))
	if _, err := ReadBackUpper(up, "u", man, none, testStage(t), DefaultLimits, func(string) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("a failing question: got %v", err)
	}
}

// deviceArchive is an upper directory holding /dev/null's twin (character device 1/3).
func deviceArchive(t *testing.T) io.Reader {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		_ = tw.WriteHeader(&tar.Header{Name: "u/", Typeflag: tar.TypeDir, Mode: 0o755})
		_ = tw.WriteHeader(&tar.Header{Name: "u/null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3})
		pw.CloseWithError(tw.Close())
	}()
	return pr
}
