//go:build unix

package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// testTimeout bounds every Run in these tests, so a regression fails instead of hanging.
const testTimeout = 30 * time.Second

func run(t *testing.T, spec sandbox.Spec) (sandbox.Exit, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	x, err := New().Run(ctx, spec)
	if ctx.Err() != nil {
		t.Fatalf("run hit the test timeout of %v", testTimeout)
	}
	return x, err
}

func TestExitCodes(t *testing.T) {
	for _, code := range []int{0, 3} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			spec := childSpec(t, "exit", fmt.Sprintf("HOSTEXEC_CODE=%d", code), "HOSTEXEC_TAG=t1")
			spec.Stdout, spec.Stderr = &stdout, &stderr
			x, err := run(t, spec)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			want := sandbox.Exit{Code: code, Duration: x.Duration}
			if x != want {
				t.Errorf("exit: got %+v, want %+v", x, want)
			}
			if x.Duration <= 0 {
				t.Errorf("duration: got %v, want > 0", x.Duration)
			}
			if got := stdout.String(); got != "out t1\n" {
				t.Errorf("stdout: got %q, want %q", got, "out t1\n")
			}
			if got := stderr.String(); got != "err t1\n" {
				t.Errorf("stderr: got %q, want %q", got, "err t1\n")
			}
		})
	}
}

// patternWriter checks every byte against the child's pattern as it streams, so order,
// completeness and the separation from stderr are all verified without keeping 50 MiB.
type patternWriter struct {
	n   int
	bad int // first wrong offset + 1
}

func (p *patternWriter) Write(b []byte) (int, error) {
	for i, c := range b {
		if p.bad == 0 && c != patternByte(p.n+i) {
			p.bad = p.n + i + 1
		}
	}
	p.n += len(b)
	return len(b), nil
}

func TestLargeOutputStreamsInOrder(t *testing.T) {
	const size = 50 << 20
	var stdout patternWriter
	var stderr bytes.Buffer
	spec := childSpec(t, "big", fmt.Sprintf("HOSTEXEC_BYTES=%d", size))
	spec.Stdout, spec.Stderr = &stdout, &stderr
	x, err := run(t, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if x.Code != 0 || x.StreamsCut {
		t.Errorf("exit: got %+v, want code 0 and streams not cut", x)
	}
	if stdout.n != size {
		t.Errorf("stdout bytes: got %d, want %d", stdout.n, size)
	}
	if stdout.bad != 0 {
		t.Errorf("stdout: wrong byte at offset %d, want the child's pattern", stdout.bad-1)
	}
	if got := stderr.String(); got != "stderr only\n" {
		t.Errorf("stderr: got %q, want %q", got, "stderr only\n")
	}
}

func TestStdinIsNullDevice(t *testing.T) {
	var stdout bytes.Buffer
	spec := childSpec(t, "stdin")
	spec.Stdout = &stdout
	if _, err := run(t, spec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := stdout.String(), "bytes=0 err=<nil> char=true\n"; got != want {
		t.Errorf("child's view of stdin: got %q, want %q", got, want)
	}
}

func TestEnvIsExactlySpecEnv(t *testing.T) {
	t.Setenv("HOSTEXEC_LEAK", "from the server") // must not reach the child
	var stdout bytes.Buffer
	spec := childSpec(t, "env", "FOO=bar baz", "EMPTY=", "MULTI=a\nb")
	spec.Stdout = &stdout
	if _, err := run(t, spec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(stdout.String(), "\x00"), "\x00")
	want := slices.Clone(spec.Env)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("child env: got %q, want %q", got, want)
	}
}

// A nil Env is an empty environment, not the server's (exec.Cmd's default for nil).
func TestNilEnvIsEmpty(t *testing.T) {
	envPath, err := exec.LookPath("env")
	if err != nil {
		t.Skipf("no env(1): %v", err)
	}
	t.Setenv("HOSTEXEC_LEAK", "from the server")
	var stdout bytes.Buffer
	x, err := run(t, sandbox.Spec{Path: envPath, Stdout: &stdout})
	if err != nil || x.Code != 0 {
		t.Fatalf("Run: %+v, %v", x, err)
	}
	if stdout.Len() != 0 {
		t.Errorf("env(1) output: got %q, want empty", stdout.String())
	}
}

// A relative Path with a separator is taken relative to the server's working directory, not
// to spec.Dir.
func TestRelativePathFromServerDir(t *testing.T) {
	spec := childSpec(t, "exit", "HOSTEXEC_TAG=rel")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, spec.Path)
	if err != nil {
		t.Skipf("no relative path to the test binary: %v", err)
	}
	if !strings.Contains(rel, string(filepath.Separator)) {
		rel = "." + string(filepath.Separator) + rel
	}
	spec.Path = rel
	// A Dir at a different depth, so that rel means nothing relative to it.
	spec.Dir = filepath.Join(spec.Dir, "a", "b", "c", "d", "e")
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	spec.Stdout = &stdout
	x, err := run(t, spec)
	if err != nil || x.Code != 0 || stdout.String() != "out rel\n" {
		t.Errorf("Run %s in dir %s: got %+v, %v, stdout %q; want code 0 and %q", rel, spec.Dir, x, err, stdout.String(), "out rel\n")
	}
}

func TestStopOnContextEnd(t *testing.T) {
	tests := []struct {
		name       string
		mode       string
		wantCode   int
		wantSignal string
		minElapsed time.Duration // since cancel
	}{
		{name: "exits on SIGINT", mode: "sigint-exit", wantCode: 0},
		{name: "ignores SIGINT and SIGTERM", mode: "ignore", wantCode: -1, wantSignal: "SIGKILL",
			minElapsed: sandbox.DefaultStopGrace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout := newWatch(contains("ready\n"))
			spec := childSpec(t, tt.mode)
			spec.Stdout = stdout
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan runResult, 1)
			go func() {
				x, err := New().Run(ctx, spec)
				done <- runResult{x, err, time.Now()}
			}()
			awaitHit(t, stdout, testTimeout, "ready line")
			cancelled := time.Now()
			cancel()
			var r runResult
			select {
			case r = <-done:
			case <-time.After(testTimeout):
				t.Fatal("Run did not return after cancel")
			}
			if r.err != nil {
				t.Fatalf("Run: %v", r.err)
			}
			if !r.exit.Stopped || r.exit.Code != tt.wantCode || r.exit.Signal != tt.wantSignal {
				t.Errorf("exit: got %+v, want Stopped, code %d, signal %q", r.exit, tt.wantCode, tt.wantSignal)
			}
			elapsed := r.at.Sub(cancelled)
			if elapsed < tt.minElapsed || elapsed > 5*time.Second {
				t.Errorf("Run returned %v after cancel, want between %v and 5s", elapsed, tt.minElapsed)
			}
		})
	}
}

func TestSettleCutsStreamsHeldByGrandchild(t *testing.T) {
	stdout := newWatch(contains("bye\n"))
	spec := childSpec(t, "orphan")
	spec.Stdout = stdout
	x, err := run(t, spec)
	returned := time.Now()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	_, gc := pids(t, stdout.String())
	if !x.StreamsCut || x.Stopped || x.Code != 0 {
		t.Errorf("exit: got %+v, want StreamsCut, not Stopped, code 0", x)
	}
	// The child printed "bye" just before exiting; the grace counts from its exit. The pump may
	// deliver "bye" a little after the exit on a loaded machine, so the lower bound is loose: it
	// only proves Run waited for the grace instead of returning at the exit.
	since := returned.Sub(stdout.HitAt())
	if since < sandbox.DefaultSettleGrace/2 || since > 3*time.Second {
		t.Errorf("Run returned %v after the child's last line, want between %v and 3s", since, sandbox.DefaultSettleGrace/2)
	}
	assertGone(t, gc, "grandchild holding stdout")
}

func TestStopKillsWholeTree(t *testing.T) {
	// Both the child and its grandchild ignore SIGINT/SIGTERM; the grandchild prints "ready"
	// through the inherited stdout, the child "tree-ready".
	stdout := newWatch(func(s string) bool { return strings.Count(s, "ready\n") >= 2 })
	spec := childSpec(t, "tree")
	spec.Stdout = stdout
	spec.StopGrace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan runResult, 1)
	go func() {
		x, err := New().Run(ctx, spec)
		done <- runResult{x, err, time.Now()}
	}()
	awaitHit(t, stdout, testTimeout, "ready lines of child and grandchild")
	child, gc := pids(t, stdout.String())
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	if !r.exit.Stopped || r.exit.Signal != "SIGKILL" {
		t.Errorf("exit: got %+v, want Stopped by SIGKILL", r.exit)
	}
	assertGone(t, child, "child")
	assertGone(t, gc, "grandchild")
}

// A descendant that leaves the process group cannot be killed on Unix; Run must still not hang
// on the pipes it holds.
func TestSetsidGrandchildDoesNotHangRun(t *testing.T) {
	stdout := newWatch(contains("bye\n"))
	spec := childSpec(t, "orphan-setsid")
	spec.Stdout = stdout
	spec.SettleGrace = 200 * time.Millisecond
	x, err := run(t, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	_, gc := pids(t, stdout.String())
	t.Cleanup(func() {
		if gc > 1 {
			_ = unix.Kill(gc, unix.SIGKILL)
		}
	})
	if !x.StreamsCut || x.Code != 0 {
		t.Errorf("exit: got %+v, want StreamsCut and code 0", x)
	}
}

// With default graces, cancellation ends Run within 2 s even in the worst case: the child
// ignores SIGINT (killed after StopGrace) and an escaped grandchild holds the pipes (cut
// SettleGrace after the kill). The settle grace counts from the exit, not from the cancel.
func TestCancelWorstCaseBounded(t *testing.T) {
	stdout := newWatch(contains("tree-ready\n"))
	spec := childSpec(t, "tree-setsid")
	spec.Stdout = stdout
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan runResult, 1)
	go func() {
		x, err := New().Run(ctx, spec)
		done <- runResult{x, err, time.Now()}
	}()
	awaitHit(t, stdout, testTimeout, "tree-ready line")
	child, gc := pids(t, stdout.String())
	t.Cleanup(func() {
		if gc > 1 {
			_ = unix.Kill(gc, unix.SIGKILL)
		}
	})
	cancelled := time.Now()
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	if !r.exit.Stopped || !r.exit.StreamsCut || r.exit.Signal != "SIGKILL" {
		t.Errorf("exit: got %+v, want Stopped, StreamsCut, SIGKILL", r.exit)
	}
	elapsed := r.at.Sub(cancelled)
	minimum := sandbox.DefaultStopGrace + sandbox.DefaultSettleGrace
	if elapsed < minimum || elapsed > 5*time.Second {
		t.Errorf("Run returned %v after cancel, want between %v and 5s (2s expected)", elapsed, minimum)
	}
	t.Logf("returned %v after cancel", elapsed)
	assertGone(t, child, "child")
}

// slowFirstWrite blocks its first Write until the child process (pid from that first line) is
// gone and the settle grace is long over — a consumer too slow to have read the child's last
// output before the cut.
type slowFirstWrite struct {
	grace time.Duration
	buf   bytes.Buffer
}

func (s *slowFirstWrite) Write(p []byte) (int, error) {
	if s.buf.Len() == 0 {
		// Runs on Run's pump goroutine: no t.Fatal here; the test checks the output later.
		var child, gc int
		_, _ = fmt.Sscanf(string(p), "pid=%d gc=%d", &child, &gc)
		deadline := time.Now().Add(testTimeout)
		for alive(child) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(3 * s.grace) // simulated slowness, not synchronisation
	}
	return s.buf.Write(p)
}

func TestCutDeliversBufferedTail(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the child needs FIONREAD on its stdout pipe")
	}
	spec := childSpec(t, "late-tail")
	spec.SettleGrace = 100 * time.Millisecond
	stdout := &slowFirstWrite{grace: spec.SettleGrace}
	spec.Stdout = stdout
	x, err := run(t, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	_, gc := pids(t, stdout.buf.String())
	t.Cleanup(func() {
		if gc > 1 {
			_ = unix.Kill(gc, unix.SIGKILL)
		}
	})
	if !x.StreamsCut || x.Code != 0 {
		t.Errorf("exit: got %+v, want StreamsCut and code 0", x)
	}
	if got := stdout.buf.String(); !strings.HasSuffix(got, "tEND\n") {
		t.Errorf("stdout ends with %q, want the tail the child wrote before exiting", got[max(0, len(got)-20):])
	}
}

func TestKilledByExternalSignal(t *testing.T) {
	spec := childSpec(t, "selfterm")
	x, err := run(t, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := sandbox.Exit{Code: -1, Signal: "SIGTERM", Duration: x.Duration}
	if x != want {
		t.Errorf("exit: got %+v, want %+v", x, want)
	}
}

func TestLaunchErrors(t *testing.T) {
	dir := t.TempDir()
	noExec := dir + "/not-executable"
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noInterp := dir + "/no-interpreter"
	if err := os.WriteFile(noInterp, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		path, dir   string
		wantMissing bool
		wantOp      string
		wantInMsg   string // part of err.Error() a user needs to see
	}{
		{name: "missing absolute path", path: dir + "/cline", wantMissing: true, wantOp: "start", wantInMsg: "npm i -g cline"},
		{name: "missing on PATH", path: "cline-mcp-no-such-program", wantMissing: true, wantOp: "start", wantInMsg: "--cline PATH"},
		{name: "empty path", path: "", wantMissing: true, wantOp: "start", wantInMsg: "no executable"},
		{name: "not executable", path: noExec, wantOp: "start", wantInMsg: "chmod +x"},
		{name: "directory as path", path: dir, wantOp: "start", wantInMsg: "is a directory"},
		{name: "missing interpreter", path: noInterp, wantOp: "start", wantInMsg: "#! line"},
		{name: "missing dir", path: exe, dir: dir + "/gone", wantOp: "chdir", wantInMsg: dir + "/gone"},
		{name: "dir is a file", path: exe, dir: noExec, wantOp: "chdir", wantInMsg: "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			spec := sandbox.Spec{Path: tt.path, Dir: tt.dir, Env: []string{childEnv + "=exit"}}
			x, err := New().Run(t.Context(), spec)
			var le *sandbox.LaunchError
			if !errors.As(err, &le) {
				t.Fatalf("error: got %v (exit %+v), want a *sandbox.LaunchError", err, x)
			}
			if le.Missing != tt.wantMissing || le.Op != tt.wantOp {
				t.Errorf("launch error: got Op %q Missing %v, want Op %q Missing %v", le.Op, le.Missing, tt.wantOp, tt.wantMissing)
			}
			if !strings.Contains(err.Error(), tt.wantInMsg) {
				t.Errorf("message: got %q, want it to contain %q", err.Error(), tt.wantInMsg)
			}
			if le.Hint == "" {
				t.Errorf("hint: got empty, want a sentence telling the user what to do")
			}
			waitGoroutines(t, before)
		})
	}
}

func TestContextDoneBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stdout bytes.Buffer
	spec := childSpec(t, "exit")
	spec.Stdout = &stdout
	_, err := New().Run(ctx, spec)
	if !errors.Is(err, context.Canceled) || sandbox.IsLaunchError(err) {
		t.Errorf("error: got %v, want context.Canceled and no LaunchError", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: got %q, want nothing (no child started)", stdout.String())
	}
}

// bytes.Buffer is not safe for concurrent use: with -race this fails unless Run serialises
// writes when both streams share one writer.
func TestSameWriterForBothStreams(t *testing.T) {
	var both bytes.Buffer
	spec := childSpec(t, "exit", "HOSTEXEC_TAG=x")
	spec.Stdout, spec.Stderr = &both, &both
	if _, err := run(t, spec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := both.String()
	if !strings.Contains(got, "out x\n") || !strings.Contains(got, "err x\n") {
		t.Errorf("combined output: got %q, want both lines", got)
	}
}

type failingWriter struct{ writes int }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.writes++
	return 0, errors.New("sink broken")
}

func TestFailingWriterStillDrains(t *testing.T) {
	var w failingWriter
	spec := childSpec(t, "big", fmt.Sprintf("HOSTEXEC_BYTES=%d", 4<<20))
	spec.Stdout = &w
	x, err := run(t, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if x.Code != 0 || x.StreamsCut {
		t.Errorf("exit: got %+v, want code 0 (child not blocked on a full pipe)", x)
	}
	if w.writes != 1 {
		t.Errorf("writes to the failing writer: got %d, want 1", w.writes)
	}
}

func TestConcurrentRuns(t *testing.T) {
	const n = 100
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			spec := childSpec(t, "exit", fmt.Sprintf("HOSTEXEC_CODE=%d", i%5), fmt.Sprintf("HOSTEXEC_TAG=%d", i))
			spec.Stdout, spec.Stderr = &stdout, &stderr
			// Under this fork load a sibling child can hold an inherited pipe end (until
			// its own exec) for longer than the default 500 ms; this test is about
			// concurrency, not settlement.
			spec.SettleGrace = 10 * time.Second
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			x, err := New().Run(ctx, spec)
			switch {
			case err != nil:
				errs <- fmt.Errorf("run %d: %w", i, err)
			case x.Code != i%5 || x.Stopped || x.StreamsCut:
				errs <- fmt.Errorf("run %d: got %+v, want code %d", i, x, i%5)
			case stdout.String() != fmt.Sprintf("out %d\n", i) || stderr.String() != fmt.Sprintf("err %d\n", i):
				errs <- fmt.Errorf("run %d: got stdout %q stderr %q", i, stdout.String(), stderr.String())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitGoroutines(t, before)
}

var _ io.Writer = (*watch)(nil)
