package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

type rec struct {
	ID     string    `json:"id"`
	At     time.Time `json:"at"`
	N      int       `json:"n"`
	Writer string    `json:"writer,omitempty"`
	Pad    string    `json:"pad,omitempty"`
}

func newStore(dir string) *Store[rec] {
	return &Store[rec]{Dir: dir, Kind: "test", ID: func(r rec) string { return r.ID },
		Time: func(r rec) time.Time { return r.At }}
}

// TestMain runs the test binary as a writer process when asked (see writerProcess).
func TestMain(m *testing.M) {
	if dir := os.Getenv("STORE_TEST_WRITER"); dir != "" {
		writerProcess(dir, os.Getenv("STORE_TEST_NAME"), os.Getenv("STORE_TEST_COUNT"))
		return
	}
	os.Exit(m.Run())
}

// writerProcess writes the record "shared" and its own record count times (count -1: until
// killed), printing each n after the write returned.
func writerProcess(dir, name, count string) {
	n, _ := strconv.Atoi(count)
	s := newStore(dir)
	pad := strings.Repeat(name, 64<<10/len(name))
	for i := 1; n < 0 || i <= n; i++ {
		for _, id := range []string{"shared", name} {
			if err := s.Put(rec{ID: id, At: time.Now(), N: i, Writer: name, Pad: pad}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
		fmt.Println(i)
	}
}

func startWriter(t *testing.T, dir, name string, count int) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STORE_TEST_WRITER="+dir, "STORE_TEST_NAME="+name, "STORE_TEST_COUNT="+strconv.Itoa(count))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

// checkWhole fails unless r is a whole record one of the writers wrote.
func checkWhole(t *testing.T, r rec, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("a reader saw a broken record: %v", err)
	}
	if r.Writer == "" || len(r.Pad) != 64<<10/len(r.Writer)*len(r.Writer) || r.Pad != strings.Repeat(r.Writer, len(r.Pad)/len(r.Writer)) {
		t.Fatalf("a reader saw a mixed record: writer %q n %d pad %d bytes", r.Writer, r.N, len(r.Pad))
	}
}

// TestTwoProcessesWriteOneRecord: two server processes replacing the same record while this one
// reads it: every read is one writer's whole record, never a mix, and each writer's last own
// record is on disk.
func TestTwoProcessesWriteOneRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "recs")
	const count = 60
	a, outA := startWriter(t, dir, "alpha", count)
	b, outB := startWriter(t, dir, "bravo", count)
	done := make(chan struct{}, 2)
	for _, sc := range []*bufio.Scanner{outA, outB} {
		go func() {
			for sc.Scan() {
			}
			done <- struct{}{}
		}()
	}
	s := newStore(dir)
	reads, seen := 0, map[string]bool{}
	for finished := 0; finished < 2; {
		select {
		case <-done:
			finished++
			continue
		default:
		}
		r, err := s.Get("shared")
		if errors.Is(err, ErrNotFound) {
			continue // not written yet
		}
		checkWhole(t, r, err)
		reads++
		seen[r.Writer] = true
	}
	for _, c := range []*exec.Cmd{a, b} {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	if reads == 0 {
		t.Fatal("the reader never saw the shared record: the test proved nothing")
	}
	for _, w := range []string{"alpha", "bravo"} {
		r, err := s.Get(w)
		checkWhole(t, r, err)
		if r.N != count {
			t.Errorf("%s's record: got n %d, want %d", w, r.N, count)
		}
	}
	t.Logf("%d reads, writers seen: %v", reads, seen)
}

// TestCrashedWriter: a writer killed while it writes leaves the last whole record (or the one
// before), never a torn one; what it left behind is no record, and Expire removes it.
func TestCrashedWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "recs")
	c, out := startWriter(t, dir, "crash", -1)
	last := 0
	for out.Scan() {
		if last, _ = strconv.Atoi(out.Text()); last >= 5 {
			break
		}
	}
	if last < 5 {
		t.Fatalf("the writer stopped after %d writes", last)
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	s := newStore(dir)
	r, err := s.Get("crash")
	checkWhole(t, r, err)
	if r.N < last {
		t.Errorf("got record n %d, want at least %d (the last write that returned)", r.N, last)
	}
	if list, bad := s.List(); len(list) != 2 || len(bad) != 0 {
		t.Errorf("after the crash: %d records, bad %v; want 2 and none", len(list), bad)
	}
	// Plant what a crash at the worst moment leaves: a half-written temporary file.
	half := filepath.Join(dir, tmpPrefix+"crash-0123456789abcdef")
	if err := os.WriteFile(half, []byte(`{"id":"crash","n":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if list, bad := s.List(); len(list) != 2 || len(bad) != 0 {
		t.Errorf("a leftover temporary file was read: %d records, bad %v", len(list), bad)
	}
	s.Expire(time.Now(), time.Hour, nil)
	if _, err := os.Lstat(half); err != nil {
		t.Fatalf("a fresh temporary file (a live writer's) was removed: %v", err)
	}
	s.Expire(time.Now().Add(TempGrace+time.Minute), 24*time.Hour, nil)
	left, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*"))
	if len(left) != 0 {
		t.Errorf("temporary files left after Expire: %v", left)
	}
	if _, err := s.Get("crash"); err != nil {
		t.Errorf("cleaning removed the record: %v", err)
	}
}

// TestRoundTrip: a record reads back as written, 0600 in a 0700 directory; a missing one is
// ErrNotFound; a file that names another record is refused; Delete is idempotent.
func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "recs")
	s := newStore(dir)
	if _, err := s.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get before the directory exists: got %v, want ErrNotFound", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	if err := s.Put(rec{ID: "a", At: now, N: 7}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Get("a"); err != nil || r.N != 7 || !r.At.Equal(now) {
		t.Fatalf("got %+v %v, want n 7", r, err)
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(filepath.Join(dir, "a.json"))
		di, _ := os.Stat(dir)
		if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
			t.Errorf("modes: record %v dir %v, want 0600 and 0700", fi.Mode().Perm(), di.Mode().Perm())
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "b.json"), []byte(`{"id":"a","n":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("b"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("a file naming another record: got %v, want a refusal", err)
	}
	for range 2 {
		if err := s.Delete("a"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after Delete: got %v, want ErrNotFound", err)
	}
	s.Max = 8
	if err := s.Put(rec{ID: "big", N: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("big"); err == nil {
		t.Error("a record larger than Max was read")
	}
}

// TestListAndExpire: List is newest first, ties by id, corrupt files reported; Expire removes
// exactly the records older than its age that are not exempt and returns them.
func TestListAndExpire(t *testing.T) {
	s := newStore(filepath.Join(t.TempDir(), "recs"))
	now := time.Now()
	for _, r := range []rec{
		{ID: "old", At: now.Add(-3 * time.Hour)},
		{ID: "kept", At: now.Add(-3 * time.Hour), N: 1},
		{ID: "b", At: now},
		{ID: "a", At: now},
		{ID: "mid", At: now.Add(-time.Hour)},
	} {
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "broken.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	list, bad := s.List()
	var order []string
	for _, r := range list {
		order = append(order, r.ID)
	}
	if got, want := strings.Join(order, " "), "a b mid kept old"; got != want || len(bad) != 1 {
		t.Errorf("list: got %q bad %v, want %q and the broken record", got, bad, want)
	}
	gone := s.Expire(now, 2*time.Hour, func(r rec) bool { return r.N == 1 })
	if len(gone) != 1 || gone[0].ID != "old" {
		t.Errorf("expired %+v, want only old", gone)
	}
	if list, _ := s.List(); len(list) != 4 {
		t.Errorf("after Expire %d records, want 4", len(list))
	}
	if gone := s.Expire(now, time.Hour, nil); len(gone) != 1 || gone[0].ID != "kept" {
		t.Errorf("at exactly its age a record stays, older goes: expired %+v, want kept", gone)
	}
}

// TestHostileIDs: an id never names a file outside the directory, a hidden or temporary file, or
// anything the caller's narrower rule refuses — even when a record waits there.
func TestHostileIDs(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "recs")
	s := newStore(dir)
	if err := s.Put(rec{ID: "inside"}); err != nil {
		t.Fatal(err)
	}
	// The marker: a record outside the directory that a traversal would reach.
	outside := filepath.Join(base, "x.json")
	if err := os.WriteFile(outside, []byte(`{"id":"../x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "../x.json")); err != nil {
		t.Fatalf("the marker is not reachable by the traversal, the test would prove nothing: %v", err)
	}
	long := strings.Repeat("a", 129)
	for _, id := range []string{"../x", "..", "a/b", `a\b`, "", ".hidden", ".tmp-inside-0", "x..y", "a\x00b", long, "/etc/passwd"} {
		if ValidID(id) {
			t.Errorf("ValidID(%q)", id)
		}
		if _, err := s.Get(id); err == nil {
			t.Errorf("Get(%q) succeeded", id)
		}
		if err := s.Put(rec{ID: id}); err == nil {
			t.Errorf("Put(%q) succeeded", id)
		}
		if err := s.Delete(id); err == nil {
			t.Errorf("Delete(%q) succeeded", id)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the outside record is gone: %v", err)
	}
	s.Valid = func(id string) bool { return len(id) == 3 }
	if _, err := s.Get("inside"); err == nil {
		t.Error("Get of an id the narrower rule refuses succeeded")
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("List returned %d records the narrower rule refuses", len(list))
	}
}
