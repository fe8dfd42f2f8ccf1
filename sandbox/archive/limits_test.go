package archive

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Crafted archives that lie about sizes, names and counts. Each test measures what the stage
// holds after the refusal (ReadBack leaves its files for the caller's Close), and how many bytes
// of the stream were read: a limit is kept on the declared size, before the content.

// rawHeader is a ustar header block written by hand, so a test can declare what tar.Writer
// would refuse to write.
func rawHeader(name string, typ byte, size int64) []byte {
	return header(name, typ, size, "ustar\x0000")
}

// gnuHeader is an old-GNU header block (the format of GNU sparse entries) whose real size is
// realSize.
func gnuHeader(name string, typ byte, size, realSize int64) []byte {
	b := header(name, typ, size, "ustar  \x00")
	copy(b[483:495], fmt.Sprintf("%011o\x00", realSize))
	return checksum(b)
}

func header(name string, typ byte, size int64, magic string) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:108], "0000644\x00")
	copy(b[108:116], "0000000\x00")
	copy(b[116:124], "0000000\x00")
	copy(b[124:136], fmt.Sprintf("%011o\x00", size))
	copy(b[136:148], "00000000000\x00")
	b[156] = typ
	copy(b[257:265], magic)
	return checksum(b)
}

func checksum(b []byte) []byte {
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// paxBlock is a PAX extended header ('x') carrying records, padded to whole blocks.
func paxBlock(records map[string]string) []byte {
	var body strings.Builder
	for k, v := range records {
		rec := " " + k + "=" + v + "\n"
		n := len(rec) + 1
		for len(strconv.Itoa(n))+len(rec) != n {
			n++
		}
		body.WriteString(strconv.Itoa(n) + rec)
	}
	return append(rawHeader("PaxHeaders/x", tar.TypeXHeader, int64(body.Len())), pad([]byte(body.String()))...)
}

func pad(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}

// zeros is an endless stream of zero bytes that counts what was read from it.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// stagedBytes is what the stage dir holds: its files' bytes, and their cost as ReadBack counts it
// (whole blocks, one at least).
func stagedBytes(t *testing.T, s *Stage) (data, cost int64) {
	t.Helper()
	entries, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		data += fi.Size()
		cost += stageCost(fi.Size())
	}
	return data, cost
}

const gb26 = 2_600_000_000 // the sparse file of the report: 2.6 GB, free in the container

// TestReadBackRefusesDeclaredSizeBeforeWriting: a header declaring 2.6 GB against limits of a
// few MiB is refused after its header. Before the fix the content was staged in full and only
// then counted (the report: 2,578 MiB written to TMPDIR).
func TestReadBackRefusesDeclaredSizeBeforeWriting(t *testing.T) {
	lim := limits(func(l *Limits) { l.File, l.Staged = 4<<20, 8<<20 })
	for _, tt := range []struct {
		name string
		head []byte
	}{
		{"ustar size", rawHeader("repo/big.bin", tar.TypeReg, gb26)},
		{"pax size overrides a small ustar size", append(paxBlock(map[string]string{"size": strconv.Itoa(gb26)}), rawHeader("repo/big.bin", tar.TypeReg, 10)...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := &zeros{}
			r := io.MultiReader(bytes.NewReader(rawHeader("repo/", tar.TypeDir, 0)), bytes.NewReader(tt.head), io.LimitReader(body, gb26))
			st := testStage(t)
			_, err := ReadBack(r, "repo", Manifest{}, func(string) bool { return false }, st, lim)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "big.bin") {
				t.Fatalf("got %v, want big.bin refused", err)
			}
			data, cost := stagedBytes(t, st)
			t.Logf("declared %d bytes; staged %d bytes (cost %d), read %d bytes of content; %v", int64(gb26), data, cost, body.n, err)
			if cost > lim.Staged || data > 0 {
				t.Errorf("staged %d bytes (cost %d), want nothing of a file refused on its header (limit %d)", data, cost, lim.Staged)
			}
			if body.n > lim.Staged {
				t.Errorf("read %d bytes of the refused content, want at most %d", body.n, lim.Staged)
			}
		})
	}
}

// TestReadBackBigUnchangedFileIsHashedNotStaged: a file that may be the one copied in (same path,
// same size) but is bigger than the staging left is hashed without being written: accepted when
// it is unchanged, refused when it differs; the stage holds nothing either way.
func TestReadBackBigUnchangedFileIsHashedNotStaged(t *testing.T) {
	const n = 24 << 20
	lim := limits(func(l *Limits) { l.File, l.Staged = 4<<20, 8<<20 })
	h := sha256.New()
	if _, err := io.CopyN(h, &zeros{}, n); err != nil {
		t.Fatal(err)
	}
	var zeroSum [sha256.Size]byte
	copy(zeroSum[:], h.Sum(nil))
	for _, tt := range []struct {
		name    string
		sum     [sha256.Size]byte
		refused bool
	}{{"unchanged", zeroSum, false}, {"changed", sha256.Sum256([]byte("other")), true}} {
		t.Run(tt.name, func(t *testing.T) {
			man := Manifest{"big.bin": {kind: 'f', mode: 0o644, size: n, sum: tt.sum}}
			r := io.MultiReader(bytes.NewReader(rawHeader("repo/", tar.TypeDir, 0)), bytes.NewReader(rawHeader("repo/big.bin", tar.TypeReg, n)),
				io.LimitReader(&zeros{}, n), bytes.NewReader(make([]byte, 1024)))
			st := testStage(t)
			plan, err := ReadBack(r, "repo", man, func(string) bool { return false }, st, lim)
			if got := errors.Is(err, ErrRefused); got != tt.refused {
				t.Fatalf("got %v, want refused=%v", err, tt.refused)
			}
			if err == nil && len(plan.changes)+len(plan.deletes) != 0 {
				t.Errorf("got changes %+v deletes %v, want none", plan.changes, plan.deletes)
			}
			if data, _ := stagedBytes(t, st); data != 0 {
				t.Errorf("staged %d bytes, want none", data)
			}
		})
	}
}

// TestReadBackLimitsAreKeptOnDisk: every way of passing a limit is refused, and the stage never
// holds more than lim.Staged (counted in blocks, as the disk allocates them).
func TestReadBackLimitsAreKeptOnDisk(t *testing.T) {
	lim := limits(func(l *Limits) { l.File, l.Staged, l.Name, l.Depth, l.Names = 64<<10, 100*StageBlock, 200, 20, 4096 })
	tiny := []ent{dir("repo/")}
	for i := range 300 {
		tiny = append(tiny, file("repo/f"+strconv.Itoa(i), "x"))
	}
	deep := []ent{dir("repo/")}
	for p := "repo/d"; strings.Count(p, "/") <= 25; p += "/d" {
		deep = append(deep, dir(p+"/"))
	}
	many := []ent{dir("repo/")}
	for i := range 40 {
		many = append(many, dir(fmt.Sprintf("repo/%0120d/", i)))
	}
	tests := []struct {
		name string
		ents []ent
		why  string
	}{
		{"many tiny new files", tiny, "staged for one copy back"},
		{"one file over the per-file limit", []ent{dir("repo/"), file("repo/big", strings.Repeat("x", 65<<10))}, "a changed file may have"},
		{"a long name", []ent{dir("repo/"), file("repo/"+strings.Repeat("n", 201), "x")}, "longer than 200 bytes"},
		{"a long link target", []ent{dir("repo/"), symlink("repo/l", strings.Repeat("t", 201))}, "longer than 200 bytes"},
		{"a deep path", deep, "deeper than 20"},
		{"names in memory", many, "paths and link targets take more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := testStage(t)
			_, err := ReadBack(archive(t, tt.ents...), "repo", Manifest{}, func(string) bool { return false }, st, lim)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("got %v, want refused with %q", err, tt.why)
			}
			if _, cost := stagedBytes(t, st); cost > lim.Staged {
				t.Errorf("the stage takes %d bytes, more than the limit %d", cost, lim.Staged)
			}
		})
	}
}

// TestReadBackLyingStreams: content longer or shorter than declared, and sparse entries (whose
// declared size is not what the stream carries), never stage more than declared.
func TestReadBackLyingStreams(t *testing.T) {
	root := rawHeader("repo/", tar.TypeDir, 0)
	sparseMap := pad([]byte("1\n0\n1\n"))
	tests := []struct {
		name   string
		stream []byte
		why    string // in the refusal; "" for any error (the stream ends early)
	}{
		{"more bytes than declared", concat(root, rawHeader("repo/a", tar.TypeReg, 10), pad(bytes.Repeat([]byte("y"), 2000))), "malformed"},
		{"fewer bytes than declared", concat(root, rawHeader("repo/a", tar.TypeReg, 1<<20), bytes.Repeat([]byte("y"), 100)), ""},
		// a declared size that would wrap the archive's total around: the read limit still holds
		{"sizes that overflow", concat(root, rawHeader("repo/a", tar.TypeReg, 1), pad([]byte("a")),
			paxBlock(map[string]string{"size": strconv.FormatInt(1<<63-1, 10)}), rawHeader("repo/d/", tar.TypeDir, 0), make([]byte, 1024)), "the archive would pass"},
		{"old GNU sparse", concat(root, gnuHeader("repo/s", tar.TypeGNUSparse, 0, gb26), make([]byte, 1024)), "sparse"},
		{"PAX GNU sparse 1.0", concat(root, paxBlock(map[string]string{
			"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "repo/s", "GNU.sparse.realsize": strconv.Itoa(gb26)}),
			rawHeader("repo/GNUSparseFile.0/s", tar.TypeReg, 513), sparseMap, pad([]byte("z")), make([]byte, 1024)), "sparse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := testStage(t)
			_, err := ReadBack(bytes.NewReader(tt.stream), "repo", Manifest{}, func(string) bool { return false }, st, DefaultLimits)
			if err == nil || (tt.why != "" && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.why))) {
				t.Fatalf("got %v, want the archive refused (%q)", err, tt.why)
			}
			t.Logf("%s: %v", tt.name, err)
			if data, _ := stagedBytes(t, st); data > 1<<20 {
				t.Errorf("staged %d bytes, more than any entry declared", data)
			}
		})
	}
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestStagingBudgetIsShared: two copy backs in flight share one budget; the second is refused
// while the first holds its staging, and accepted once the first stage is closed. The budget is
// back to zero at the end.
func TestStagingBudgetIsShared(t *testing.T) {
	budget := NewBudget(64 << 10)
	a := func() *bytes.Buffer {
		return archive(t, dir("repo/"), file("repo/a", strings.Repeat("a", 40<<10)))
	}
	stage := func() *Stage {
		s, err := NewStage(t.TempDir(), budget)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first, second := stage(), stage()
	if _, err := ReadBack(a(), "repo", Manifest{}, func(string) bool { return false }, first, DefaultLimits); err != nil {
		t.Fatal(err)
	}
	if got := budget.InUse(); got != 40<<10 {
		t.Errorf("in use: got %d, want %d", got, 40<<10)
	}
	_, err := ReadBack(a(), "repo", Manifest{}, func(string) bool { return false }, second, DefaultLimits)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "copy backs in flight") {
		t.Fatalf("got %v, want the second copy back refused by the shared budget", err)
	}
	if data, _ := stagedBytes(t, second); data != 0 {
		t.Errorf("the refused copy back staged %d bytes", data)
	}
	_ = second.Close()
	_ = first.Close()
	third := stage()
	if _, err := ReadBack(a(), "repo", Manifest{}, func(string) bool { return false }, third, DefaultLimits); err != nil {
		t.Fatalf("after the first stage closed: %v", err)
	}
	_ = third.Close()
	if got := budget.InUse(); got != 0 {
		t.Errorf("in use after every stage closed: got %d, want 0", got)
	}
	if _, err := os.Stat(filepath.Dir(third.Dir())); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(third.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stage dir is still there after Close: %v", err)
	}
}
