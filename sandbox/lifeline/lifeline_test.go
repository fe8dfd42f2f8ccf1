package lifeline

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// TestMain doubles as the watchdog: with LIFELINE_TEST_OUT set it watches fd 3 and writes what
// was left tracked to that file.
func TestMain(m *testing.M) {
	if out := os.Getenv("LIFELINE_TEST_OUT"); out != "" {
		left := Watch(os.NewFile(FD, "lifeline"))
		var b strings.Builder
		for _, k := range []string{Group, Container, Dir} {
			b.WriteString(k + "=" + strings.Join(left[k], ",") + "\n")
		}
		_ = os.WriteFile(out, []byte(b.String()), 0o600)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestWatchKeepsWhatIsStillTracked(t *testing.T) {
	in := "+g 10\n+d /a\n+g 11\n-g 10\n+c run1\n-c run1\n+d /b\nbogus\n+\n-d /nope\n+g 12"
	got := Watch(strings.NewReader(in))
	want := map[string][]string{Group: {"11", "12"}, Dir: {"/a", "/b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Watch: got %v, want %v (untracked dropped, oldest first, a last line without newline counts)", got, want)
	}
}

// The watchdog sees exactly what was tracked and not untracked when the server's end closes,
// and a value with a newline can never inject a line.
func TestLifelineEndToEnd(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "left")
	l, err := Start([]string{exe}, []string{"LIFELINE_TEST_OUT=" + out}, nil)
	if err != nil {
		t.Fatal(err)
	}
	untrack := l.TrackGroup(4242)
	l.Track(Dir, "/private/one")()
	l.Track(Container, "run-7")
	l.Track(Dir, "/evil\n+g 1")
	untrack()
	untrack() // idempotent
	l.TrackGroup(4343)
	if err := l.Close(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the watchdog wrote nothing: %v", err)
	}
	if want := "g=4343:0\nc=run-7\nd=\n"; string(b) != want {
		t.Errorf("watchdog saw %q, want %q", b, want)
	}
	var nilLife *Lifeline
	nilLife.Track(Dir, "/x")() // a nil lifeline tracks nothing and does not panic
	if err := nilLife.Close(time.Second); err != nil {
		t.Error(err)
	}
}

// GroupToKill names a group to kill only while its leader is the recorded process (or gone):
// a live process whose start time differs from the record is somebody else's.
func TestGroupToKillChecksIdentity(t *testing.T) {
	self := os.Getpid()
	start, err := proc.StartTime(self)
	if errors.Is(err, proc.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.Itoa(self)
	if pgid, err := GroupToKill(id + ":" + strconv.FormatUint(start, 10)); err != nil || pgid != self {
		t.Errorf("the recorded leader itself: got %d, %v; want %d", pgid, err, self)
	}
	for _, v := range []string{
		id + ":" + strconv.FormatUint(start+1, 10), // the pid now belongs to another process
		id + ":0",                    // no identity recorded
		id, "x:1", "1:5", "", "-3:7", // malformed, or never a group of ours
	} {
		if pgid, err := GroupToKill(v); err == nil {
			t.Errorf("GroupToKill(%q) = %d, want an error: the group must be left alone", v, pgid)
		}
	}
	// A leader that exited: no process has the pid, so a group still there is the tracked one.
	if pgid, err := GroupToKill("4194304:12345"); err != nil || pgid != 4194304 {
		t.Errorf("a gone leader: got %d, %v; want the pgid", pgid, err)
	}
}
