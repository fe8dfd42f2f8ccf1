package proc

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestMain doubles as the child of TestExitedChildIsGone: it waits for stdin to close.
func TestMain(m *testing.M) {
	if os.Getenv("PROC_TEST_CHILD") == "1" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseStatStart(t *testing.T) {
	line := "4242 (we ird) (name)) S 1 4242 4242 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1000 10 rest\n"
	got, err := parseStatStart([]byte(line))
	if err != nil || got != 987654 {
		t.Errorf("got %d %v, want 987654", got, err)
	}
	zombie := "4242 (x) Z 1 4242 4242 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1000 10\n"
	if _, err := parseStatStart([]byte(zombie)); !errors.Is(err, errZombie) {
		t.Errorf("zombie: got %v, want errZombie", err)
	}
	for _, bad := range []string{"1 (x) S 1 2", "no command field", ""} {
		if _, err := parseStatStart([]byte(bad)); err == nil {
			t.Errorf("parseStatStart(%q): got no error, want one", bad)
		}
	}
}

func supported(t *testing.T) {
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
	default:
		t.Skipf("!!! SKIPPED: no process start times on %s", runtime.GOOS)
	}
}

func TestSelfIsStableAndNonZero(t *testing.T) {
	supported(t)
	a, err := StartTime(os.Getpid())
	if err != nil || a == 0 {
		t.Fatalf("StartTime(self): got %d %v, want a non-zero time", a, err)
	}
	if b := Self().Start; b != a {
		t.Errorf("Self().Start = %d, want %d (a start time never changes)", b, a)
	}
	if Gone(os.Getpid(), a) {
		t.Error("Gone(self) = true, want false")
	}
	if !Gone(os.Getpid(), a+1) {
		t.Error("Gone(self pid, other start) = false, want true: that pid now names another process")
	}
}

// A child that exited and was reaped is gone; its pid is not reused that fast.
func TestExitedChildIsGone(t *testing.T) {
	supported(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "PROC_TEST_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := StartTime(pid)
	if err != nil || start == 0 {
		t.Fatalf("StartTime(child): got %d %v", start, err)
	}
	if Gone(pid, start) {
		t.Error("Gone(running child) = true, want false")
	}
	_ = stdin.Close()
	// Exited but not reaped: a zombie runs no more, so it is gone already.
	if !eventually(func() bool { return Gone(pid, start) }) {
		t.Error("Gone(exited, unreaped child) = false, want true")
	}
	_ = cmd.Wait()
	if _, err := StartTime(pid); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("StartTime(reaped child): got %v, want os.ErrNotExist", err)
	}
	if !Gone(pid, start) {
		t.Error("Gone(reaped child) = false, want true")
	}
}

func TestUnjudgeableCountsAsAlive(t *testing.T) {
	for _, tt := range []struct {
		pid   int
		start uint64
	}{{0, 5}, {-3, 5}, {os.Getpid(), 0}} {
		if Gone(tt.pid, tt.start) {
			t.Errorf("Gone(%d, %d) = true, want false", tt.pid, tt.start)
		}
	}
}

func TestParseInstance(t *testing.T) {
	tests := []struct {
		id     string
		want   Instance
		wantOK bool
	}{
		{"vm-12-345", Instance{"vm", 12, 345}, true},
		{"my-laptop.local-99-0", Instance{"my-laptop.local", 99, 0}, true},
		{Instance{"a-b-c", 7, 8}.String(), Instance{"a-b-c", 7, 8}, true},
		{"garbage", Instance{}, false},
		{"host-x-1", Instance{}, false},
		{"host-1-x", Instance{}, false},
		{"-1-2", Instance{}, false},
		{"host-0-2", Instance{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseInstance(tt.id)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("ParseInstance(%q): got %+v %v, want %+v %v", tt.id, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestInstanceLiveness(t *testing.T) {
	supported(t)
	host, _ := os.Hostname()
	self := Self()
	if self.PID != os.Getpid() || self.Start == 0 || self.Host != host {
		t.Fatalf("Self: got %+v, want this host, pid and a start time", self)
	}
	tests := []struct {
		name     string
		id       string
		wantDead bool
	}{
		{"this process", self.String(), false},
		{"same pid, other start time (pid reused)", Instance{host, self.PID, self.Start + 1}.String(), true},
		{"no such pid", Instance{host, 99999999, 5}.String(), true},
		{"other host", Instance{host + "x", 99999999, 5}.String(), false},
		{"unknown start time", Instance{host, 99999999, 0}.String(), false},
		{"unparsable", "nonsense", false},
	}
	for _, tt := range tests {
		if got := DeadOnHost(tt.id, host); got != tt.wantDead {
			t.Errorf("%s: DeadOnHost(%q) = %v, want %v", tt.name, tt.id, got, tt.wantDead)
		}
	}
}

func eventually(cond func() bool) bool {
	for i := 0; i < 500; i++ {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestParseProcArgs2(t *testing.T) {
	rec := []byte{2, 0, 0, 0}
	rec = append(rec, "/usr/local/bin/cline\x00\x00\x00\x00cline\x00--json\x00HOME=/h\x00CLINE_MCP_INSTANCE=a-1-2\x00\x00junk"...)
	env, err := parseProcArgs2(rec)
	if err != nil || len(env) != 2 || string(env[0]) != "HOME=/h" || string(env[1]) != "CLINE_MCP_INSTANCE=a-1-2" {
		t.Errorf("got %q %v, want HOME and CLINE_MCP_INSTANCE", env, err)
	}
	for _, bad := range [][]byte{{1}, {1, 0, 0, 0}, append([]byte{5, 0, 0, 0}, "/x\x00a\x00"...)} {
		if _, err := parseProcArgs2(bad); err == nil {
			t.Errorf("parseProcArgs2(%q): got no error", bad)
		}
	}
}

func TestWithEnvFindsAChild(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("!!! SKIPPED: no process environments on %s", runtime.GOOS)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := "PROC_TEST_MARKER_" + strconv.Itoa(os.Getpid()) // unique: other test runs may be alive
	marker := name + "=1"
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "PROC_TEST_CHILD=1", marker)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	for _, q := range []string{marker, name + "="} {
		pids, entries, err := WithEnv(q)
		if err != nil || len(pids) != 1 || pids[0] != cmd.Process.Pid || entries[0] != marker {
			t.Errorf("WithEnv(%q): got %v %v %v, want [%d] [%s]", q, pids, entries, err, cmd.Process.Pid, marker)
		}
	}
}
