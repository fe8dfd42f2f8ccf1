//go:build unix

package host

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// childSpec runs this test binary in the given child mode with exactly the given extra env.
func childSpec(t testing.TB, mode string, env ...string) sandbox.Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("os.Executable: %v", err)
	}
	return sandbox.Spec{
		Path: exe,
		// A -race child would otherwise sleep 1 s in its exit path (GORACE atexit_sleep_ms).
		Env: append([]string{childEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}, env...),
		Dir: t.TempDir(),
	}
}

// watch is a concurrency-safe output sink that closes Hit once cond holds for everything written
// so far, and remembers when.
type watch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	cond func(string) bool
	Hit  chan struct{}
	at   time.Time
}

func newWatch(cond func(string) bool) *watch {
	return &watch{cond: cond, Hit: make(chan struct{})}
}

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.cond != nil && w.at.IsZero() && w.cond(w.buf.String()) {
		w.at = time.Now()
		close(w.Hit)
	}
	return len(p), nil
}

func (w *watch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *watch) HitAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

func contains(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}

// awaitHit fails the test if w's condition does not hold within d.
func awaitHit(t *testing.T, w *watch, d time.Duration, what string) {
	t.Helper()
	select {
	case <-w.Hit:
	case <-time.After(d):
		t.Fatalf("no %s within %v; output so far: %q", what, d, w.String())
	}
}

// runResult carries Run's return values across a goroutine.
type runResult struct {
	exit sandbox.Exit
	err  error
	at   time.Time
}

// pids parses "pid=N gc=M" from a child's output.
func pids(t *testing.T, out string) (child, grandchild int) {
	t.Helper()
	i := strings.Index(out, "pid=")
	if i < 0 {
		t.Fatalf("no pid line in %q", out)
	}
	if _, err := fmt.Sscanf(out[i:], "pid=%d gc=%d", &child, &grandchild); err != nil {
		t.Fatalf("parse pid line in %q: %v", out, err)
	}
	return child, grandchild
}

// alive reports whether pid is a live process. A zombie counts as dead: once killed, an orphan
// waits for init to reap it, which is not ours to wait for.
func alive(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || runtime.GOOS != "linux"
	}
	// Field 3 follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// assertGone fails unless pid dies within a few seconds. Delivery of SIGKILL and reaping are
// asynchronous, so this polls against a deadline rather than checking once.
func assertGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Errorf("%s (pid %d) still alive, want it gone", what, pid)
			if pid > 1 {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGoroutines fails unless the goroutine count drops back to at most before within a few
// seconds (goroutines of finished runs may still be returning).
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: got %d, want <= %d\n%s", n, before, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
