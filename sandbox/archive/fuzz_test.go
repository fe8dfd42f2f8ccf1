package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzReadBack feeds ReadBack archives built from a fuzzed list of entries, one a line:
// "<type> <name> <declared size> <content or link target>", where the content may be longer or
// shorter than declared and the type any byte ('0' file, '5' directory, '2' symlink, '1' hard
// link, 'S' GNU sparse, '6' FIFO, …), and "x <key> <value>" adds a PAX record to the next
// entry (size, path, linkpath, GNU.sparse.*). The archive is written block by block by hand, so
// it lies wherever the line does. (Entry lists, not raw bytes, keep inputs short: an input the
// fuzzer finds interesting is minimised in moments, not in the minute a 4 KiB tar takes.)
// Whatever the input: no panic, the stage never takes more than lim.Staged, a refusal leaves
// the checkout as it was, nothing is written outside the checkout, no .git reaches it. Each
// input is read both as a whole tree (ReadBack) and as an overlay's upper directory
// (ReadBackUpper, where '3' 0/0 entries are whiteouts).
func FuzzReadBack(f *testing.F) {
	for _, seed := range []string{
		"5 repo/\n0 repo/a.txt 3 new\n5 repo/d/\n0 repo/d/b 1 b\n2 repo/l 0 a.txt\n1 repo/h 0 repo/a.txt",
		"5 repo/\n0 repo/../escape 1 x",
		"5 repo/\n2 repo/out 0 ../outside\n0 repo/out/x 1 x",
		"5 /\n0 /keep.txt 7 changed\n0 /big 9000 zzzz",
		"5 ./\n5 ./.git/\n0 ./.git/config 6 [core]",
		"5 repo/\n0 repo/big 2600000000 x",
		"5 repo/\nx size 99999999\n0 repo/p 1 p",
		"5 repo/\nx GNU.sparse.major 1\nx GNU.sparse.minor 0\nx GNU.sparse.realsize 2600000000\n0 repo/s 1 s",
		"5 repo/\n6 repo/fifo 0\n0 repo/keep.txt 4 kept",
		"5 repo/\n3 repo/keep.txt 0\n1 repo/w2 0 repo/keep.txt\n0 repo/w2/x 1 x",
		"5 repo/\n5 repo/d/\n3 repo/d/gone 0\n0 repo/d/new 3 new",
	} {
		f.Add(seed)
	}
	lim := Limits{Entries: 64, Read: 1 << 20, File: 8 << 10, Staged: 6 * StageBlock, Name: 128, Depth: 8, Names: 2048}
	f.Fuzz(func(t *testing.T, spec string) {
		fuzzOnce(t, spec, lim, false)
		fuzzOnce(t, spec, lim, true)
	})
}

// fuzzOnce is one FuzzReadBack input, read as a whole tree or as an upper directory.
func fuzzOnce(t *testing.T, spec string, lim Limits, upper bool) {
	root := t.TempDir()
	repo, outside := filepath.Join(root, "repo"), filepath.Join(root, "outside")
	writeTestFile(t, filepath.Join(repo, "keep.txt"), "keep")
	writeTestFile(t, filepath.Join(outside, "secret"), "secret")
	man := Manifest{}
	var in bytes.Buffer
	if err := WriteTree(tar.NewWriter(&in), repo, Owner{}, func(string) bool { return false }, nil, man); err != nil {
		t.Fatal(err)
	}
	st, err := NewStage(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var plan *Plan
	if upper {
		visible := func(rel string) (bool, error) { return len(rel)%2 == 0, nil }
		plan, err = ReadBackUpper(bytes.NewReader(entryArchive(spec)), "repo", man, HasGitPart, st, lim, visible)
	} else {
		plan, err = ReadBack(bytes.NewReader(entryArchive(spec)), "repo", man, HasGitPart, st, lim)
	}
	if _, cost := stagedBytes(t, st); cost > lim.Staged {
		t.Fatalf("the stage takes %d bytes, more than %d", cost, lim.Staged)
	}
	if err == nil {
		err = plan.Apply(repo)
	}
	if errors.Is(err, ErrRefused) {
		if fi, lerr := os.Lstat(filepath.Join(repo, "keep.txt")); lerr != nil || !fi.Mode().IsRegular() || readTestFile(t, filepath.Join(repo, "keep.txt")) != "keep" {
			t.Fatalf("a refused archive changed the checkout: %v", err)
		}
	}
	if got := tree(t, outside); got != "secret:secret;" {
		t.Fatalf("written outside the checkout: %s", got)
	}
	if _, err := os.Lstat(filepath.Join(repo, ".git")); err == nil {
		t.Fatalf("a .git reached the checkout")
	}
}

// entryArchive writes the entry lines of FuzzReadBack as a tar stream, lies included.
func entryArchive(spec string) []byte {
	var out []byte
	pax := map[string]string{}
	for _, line := range strings.Split(spec, "\n") {
		f := strings.SplitN(line, " ", 4)
		if len(f) < 2 || len(f[0]) != 1 {
			continue
		}
		if f[0] == "x" {
			if len(f) >= 3 {
				pax[f[1]] = strings.Join(f[2:], " ")
			}
			continue
		}
		var declared int64
		if len(f) >= 3 {
			declared, _ = strconv.ParseInt(f[2], 10, 64)
			declared = min(max(declared, 0), 1<<36)
		}
		rest := ""
		if len(f) == 4 {
			rest = f[3]
		}
		if len(pax) > 0 {
			out = append(out, paxBlock(pax)...)
			pax = map[string]string{}
		}
		typ := f[0][0]
		h := rawHeader(f[1], typ, declared)
		if typ == tar.TypeSymlink || typ == tar.TypeLink {
			copy(h[157:257], rest)
			h = checksum(h)
			rest = ""
		}
		out = append(out, h...)
		out = append(out, pad([]byte(rest))...)
	}
	return append(out, make([]byte, 1024)...)
}

// tree lists the regular files below dir with their content.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + ":" + readTestFile(t, p) + ";")
		return nil
	})
	return b.String()
}
