//go:build e2e

package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

func TestRunExitAndStreams(t *testing.T) {
	e := newTestExecutor(t)
	tests := []struct {
		name       string
		steps      []string
		wantCode   int
		wantSignal string
		wantOut    string
		wantErr    string
	}{
		{"exit 0", []string{"out", "hello", "err", "oops", "exit", "0"}, 0, "", "hello\n", "oops\n"},
		{"exit 3", []string{"out", "a", "err", "b", "out", "c", "exit", "3"}, 3, "", "a\nc\n", "b\n"},
		{"killed by SIGKILL", []string{"out", "x", "kill-self", "9"}, 137, "SIGKILL", "x\n", ""},
		{"killed by SIGTERM", []string{"kill-self", "15"}, 143, "SIGTERM", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, out, errOut := probeSpec(t, tt.steps...)
			x, err := e.Run(t.Context(), spec)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if x.Code != tt.wantCode || x.Signal != tt.wantSignal {
				t.Errorf("got code %d signal %q, want %d %q", x.Code, x.Signal, tt.wantCode, tt.wantSignal)
			}
			if x.Stopped || x.StreamsCut || x.OOMKilled {
				t.Errorf("got %+v, want not stopped, not cut, not OOM", x)
			}
			if got := out.String(); got != tt.wantOut {
				t.Errorf("got stdout %q, want %q", got, tt.wantOut)
			}
			if got := errOut.String(); got != tt.wantErr {
				t.Errorf("got stderr %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestRunEnvDirUserStdin(t *testing.T) {
	e := newTestExecutor(t)
	t.Setenv("CLINE_MCP_HOST_ONLY", "leak")
	dir := worldWritableDir(t)
	spec, out, _ := probeSpec(t, "out", "marker", "env", "pwd", "id", "stdin")
	spec.Env = []string{"A=1", "B=two words"}
	spec.Dir = dir
	spec.User = "12345:12345"
	spec.Mounts = []sandbox.Mount{{Source: dir, Target: dir}}
	if _, err := e.Run(t.Context(), spec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := out.String()
	for _, want := range []string{"marker\n", "env A=1\n", "env B=two words\n", "pwd " + dir + " <nil>\n", "uid=12345 gid=12345\n", "stdin 0 bytes <nil>\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("got stdout %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "CLINE_MCP_HOST_ONLY") {
		t.Errorf("got stdout %q, want no variable of the server's environment", got)
	}
}

// TestRunStreamsOutput proves output arrives while the container runs: the probe blocks until
// the test, having seen its first line, creates a file.
func TestRunStreamsOutput(t *testing.T) {
	e := newTestExecutor(t)
	dir := worldWritableDir(t)
	gate := filepath.Join(dir, "gate")
	spec, out, _ := probeSpec(t, "out", "first", "waitfile", gate, "out", "second")
	spec.Mounts = []sandbox.Mount{{Source: dir, Target: dir}}
	go func() {
		select {
		case <-out.seen("first\n"):
			_ = os.WriteFile(gate, nil, 0o644)
		case <-t.Context().Done():
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	x, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if x.Stopped || out.String() != "first\nsecond\n" {
		t.Fatalf("got %+v stdout %q, want a normal exit after first and second (output not streamed?)", x, out.String())
	}
}

func TestHardening(t *testing.T) {
	e := newTestExecutor(t)
	rw := worldWritableDir(t)
	ro := worldWritableDir(t)
	repo := worldWritableDir(t)
	git := filepath.Join(repo, ".git")
	if err := os.Mkdir(git, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(git, 0o777)
	me := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())

	tests := []hardeningCase{
		{
			name:  "root filesystem is read-only",
			steps: []string{"write", "/evil", "x", "write", "/usr/local/bin/probe", "x"},
			want:  []string{"write /evil error:", "read-only file system", "write /usr/local/bin/probe error:"},
		},
		{
			name:   "read-only mount refuses writes",
			mounts: []sandbox.Mount{{Source: ro, Target: ro, ReadOnly: true}},
			steps:  []string{"write", filepath.Join(ro, "f"), "x"},
			want:   []string{"write " + filepath.Join(ro, "f") + " error:", "read-only file system"},
			check: func(t *testing.T) {
				if _, err := os.Stat(filepath.Join(ro, "f")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("got %v, want the file absent on the host", err)
				}
			},
		},
		{
			name:   "rw mount as 12345 writes files owned by 12345",
			user:   "12345:12345",
			mounts: []sandbox.Mount{{Source: rw, Target: rw}},
			steps:  []string{"write", filepath.Join(rw, "by-12345"), "x"},
			want:   []string{"write " + filepath.Join(rw, "by-12345") + " ok"},
			check:  func(t *testing.T) { wantOwner(t, filepath.Join(rw, "by-12345"), 12345, 12345) },
		},
		{
			name:   "rw mount as the caller writes files owned by the caller",
			mounts: []sandbox.Mount{{Source: rw, Target: rw}},
			steps:  []string{"id", "write", filepath.Join(rw, "by-caller"), "x"},
			want:   []string{fmt.Sprintf("uid=%d gid=%d", os.Getuid(), os.Getgid()), "write " + filepath.Join(rw, "by-caller") + " ok"},
			check:  func(t *testing.T) { wantOwner(t, filepath.Join(rw, "by-caller"), os.Getuid(), os.Getgid()) },
		},
		{
			name:   "ro .git nested in a rw checkout",
			user:   "12345:12345",
			mounts: []sandbox.Mount{{Source: git, Target: git, ReadOnly: true}, {Source: repo, Target: repo}},
			steps:  []string{"write", filepath.Join(repo, "a.txt"), "x", "write", filepath.Join(git, "HEAD"), "x"},
			want:   []string{"write " + filepath.Join(repo, "a.txt") + " ok", "write " + filepath.Join(git, "HEAD") + " error:", "read-only file system"},
		},
		{
			name:  "tmpfs HOME and /tmp are writable by a non-root user",
			user:  "12345:12345",
			tmpfs: []sandbox.Tmpfs{{Target: "/home/cline", SizeMB: 16}, {Target: "/tmp"}},
			steps: []string{"write", "/home/cline/x", "x", "write", "/tmp/y", "y"},
			want:  []string{"write /home/cline/x ok", "write /tmp/y ok"},
		},
		{
			name:  "no capabilities",
			user:  "0:0",
			steps: []string{"caps"},
			want:  []string{"CapEff=0000000000000000"},
		},
		{
			name:    "no docker socket inside",
			steps:   []string{"stat", "/var/run/docker.sock", "stat", "/run/docker.sock"},
			want:    []string{"stat /var/run/docker.sock missing", "stat /run/docker.sock missing"},
			notWant: []string{"exists"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, e) })
	}
	_ = me
}

// hardeningCase is one probe run of TestHardening: the probe's steps as user with the mounts and
// tmpfs, what its stdout must and must not contain, and a check on the host afterwards.
type hardeningCase struct {
	name    string
	user    string
	mounts  []sandbox.Mount
	tmpfs   []sandbox.Tmpfs
	steps   []string
	want    []string
	notWant []string
	check   func(t *testing.T)
}

func (tt hardeningCase) run(t *testing.T, e *Executor) {
	steps := append([]string{"out", "marker"}, tt.steps...)
	spec, out, errOut := probeSpec(t, steps...)
	spec.User = tt.user
	spec.Mounts = tt.mounts
	spec.Tmpfs = tt.tmpfs
	x, err := e.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "marker\n") || x.Code != 0 {
		t.Fatalf("got exit %+v stdout %q stderr %q, want the probe to run (marker first, exit 0)", x, got, errOut.String())
	}
	for _, w := range tt.want {
		if !strings.Contains(got, w) {
			t.Errorf("got stdout %q, want it to contain %q", got, w)
		}
	}
	for _, w := range tt.notWant {
		if strings.Contains(got, w) {
			t.Errorf("got stdout %q, want it not to contain %q", got, w)
		}
	}
	if tt.check != nil {
		tt.check(t)
	}
}

func TestPidsLimit(t *testing.T) {
	e := newTestExecutor(t, WithPidsLimit(32))
	spec, out, _ := probeSpec(t, "out", "marker", "spawn", "64")
	if _, err := e.Run(t.Context(), spec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "marker\n") || !strings.Contains(got, "spawn error:") {
		t.Fatalf("got stdout %q, want the probe to run and fail to spawn 64 processes under a limit of 32", got)
	}
}

func TestNetworkNone(t *testing.T) {
	requireEngine(t)
	gw := bridgeGateway(t)
	addr := listenAll(t)
	_, port, _ := strings.Cut(addr, ":")
	target := gw + ":" + port
	tests := []struct {
		network string
		want    string
	}{
		{"bridge", "connect ok"}, // the control: the same connect works with a network
		{"none", "connect error:"},
	}
	for _, tt := range tests {
		t.Run(tt.network, func(t *testing.T) {
			e := newTestExecutor(t, WithNetwork(tt.network))
			spec, out, _ := probeSpec(t, "out", "marker", "connect", target)
			if _, err := e.Run(t.Context(), spec); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := out.String(); !strings.HasPrefix(got, "marker\n") || !strings.Contains(got, tt.want) {
				t.Fatalf("got stdout %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRefusesDockerSocketMount(t *testing.T) {
	e := newTestExecutor(t)
	for _, src := range []string{"/var/run/docker.sock", "/run", "/"} {
		t.Run(src, func(t *testing.T) {
			spec, _, _ := probeSpec(t, "out", "marker")
			spec.Mounts = []sandbox.Mount{{Source: src, Target: "/mnt/x"}}
			_, err := e.Run(t.Context(), spec)
			var le *sandbox.LaunchError
			if !errors.As(err, &le) || !errors.Is(err, errDockerSocket) {
				t.Fatalf("got %v, want a LaunchError refusing the socket", err)
			}
			if n := labelledContainers(t, testLabel, t.Name()); n != 0 {
				t.Errorf("got %d containers, want none created", n)
			}
		})
	}
}

// TestStop cancels the run once the probe is up (cancellation mid-run).
func TestStop(t *testing.T) {
	tests := []struct {
		name      string
		steps     []string
		grace     time.Duration
		wantCode  int
		wantSig   string
		maxReturn time.Duration // after ctx ended
	}{
		{"ignores SIGINT and SIGTERM: killed after StopGrace", []string{"ignore-signals", "out", "ready", "sleep", "1h"}, time.Second, 137, "SIGKILL", time.Second + 6*time.Second},
		{"exits on SIGINT: no need to wait for the grace", []string{"exit-on-int", "0", "out", "ready", "sleep", "1h"}, 20 * time.Second, 0, "", 6 * time.Second},
	}
	e := newTestExecutor(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, out, _ := probeSpec(t, tt.steps...)
			spec.StopGrace = tt.grace
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var ended time.Time
			var mu sync.Mutex
			go func() {
				select {
				case <-out.seen("ready\n"):
				case <-ctx.Done():
					return
				}
				mu.Lock()
				ended = time.Now()
				mu.Unlock()
				cancel()
			}()
			x, err := e.Run(ctx, spec)
			returned := time.Now()
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			mu.Lock()
			took := returned.Sub(ended)
			mu.Unlock()
			if !x.Stopped || x.Code != tt.wantCode || x.Signal != tt.wantSig {
				t.Errorf("got %+v, want Stopped with code %d signal %q", x, tt.wantCode, tt.wantSig)
			}
			if took > tt.maxReturn {
				t.Errorf("got Run returning %v after ctx ended, want at most %v", took, tt.maxReturn)
			}
			if n := labelledContainers(t, testLabel, t.Name()); n != 0 {
				t.Errorf("got %d containers left, want the container removed", n)
			}
		})
	}
}

func TestRunDeadline(t *testing.T) {
	e := newTestExecutor(t)
	spec, out, _ := probeSpec(t, "ignore-signals", "out", "ready", "sleep", "1h")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	start := time.Now()
	x, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(start); !x.Stopped || x.Signal != "SIGKILL" || took > 3*time.Second+sandbox.DefaultStopGrace+6*time.Second {
		t.Errorf("got %+v after %v, want Stopped by SIGKILL within deadline+grace+6s", x, took)
	}
	if !strings.Contains(out.String(), "ready") {
		t.Errorf("got stdout %q, want the probe to have started", out.String())
	}
	if n := labelledContainers(t, testLabel, t.Name()); n != 0 {
		t.Errorf("got %d containers left, want none", n)
	}
}

func TestLaunchErrors(t *testing.T) {
	t.Run("engine down", func(t *testing.T) {
		e, err := New(WithImage(testImage), WithEndpoint(engine.Endpoint{Host: "unix://" + filepath.Join(t.TempDir(), "dead.sock")}))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		defer e.Close()
		spec, _, _ := probeSpec(t, "out", "x")
		_, err = e.Run(t.Context(), spec)
		var le *sandbox.LaunchError
		if !errors.As(err, &le) || le.Op != "docker ping" || le.Hint != HintEngine || le.Missing {
			t.Fatalf("got %#v, want a LaunchError docker ping with the engine hint", err)
		}
		if err := e.Ping(t.Context()); !sandbox.IsLaunchError(err) {
			t.Errorf("Ping: got %v, want a LaunchError", err)
		}
	})
	t.Run("image missing", func(t *testing.T) {
		e := newTestExecutor(t, WithImage("cline-mcp/docker-test:does-not-exist"))
		if ok, err := e.ImagePresent(t.Context()); ok || err != nil {
			t.Errorf("ImagePresent: got %v %v, want false nil", ok, err)
		}
		spec, _, _ := probeSpec(t, "out", "x")
		_, err := e.Run(t.Context(), spec)
		var le *sandbox.LaunchError
		if !errors.As(err, &le) || !le.Missing || le.Hint != HintImage {
			t.Fatalf("got %v, want a Missing LaunchError with the image hint", err)
		}
	})
	t.Run("executable missing in the image", func(t *testing.T) {
		e := newTestExecutor(t)
		spec, _, errOut := probeSpec(t)
		spec.Path = "/usr/local/bin/nope"
		_, err := e.Run(t.Context(), spec)
		var le *sandbox.LaunchError
		if !errors.As(err, &le) || !le.Missing || !strings.Contains(le.Hint, "make image") {
			t.Fatalf("got %v (stderr %q), want a Missing LaunchError telling to rebuild the image", err, errOut.String())
		}
		if n := labelledContainers(t, testLabel, t.Name()); n != 0 {
			t.Errorf("got %d containers left, want none", n)
		}
	})
}

func TestConcurrentRuns(t *testing.T) {
	e := newTestExecutor(t)
	const n = 10
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			spec, out, errOut := probeSpec(t, "out", fmt.Sprintf("run-%d", i), "err", fmt.Sprintf("err-%d", i), "exit", fmt.Sprint(i))
			x, err := e.Run(t.Context(), spec)
			switch {
			case err != nil:
				errs <- fmt.Errorf("run %d: %w", i, err)
			case x.Code != i || out.String() != fmt.Sprintf("run-%d\n", i) || errOut.String() != fmt.Sprintf("err-%d\n", i):
				errs <- fmt.Errorf("run %d: got %+v %q %q", i, x, out.String(), errOut.String())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if c := labelledContainers(t, LabelInstance, e.Instance()); c != 0 {
		t.Errorf("got %d containers of this instance left, want 0", c)
	}
}

func wantOwner(t *testing.T, p string, uid, gid int) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("stat: %v", err)
	}
	gotUID, gotGID, ok := fileOwner(fi)
	if ok && (gotUID != uid || gotGID != gid) {
		t.Errorf("got %s owned by %d:%d, want %d:%d", p, gotUID, gotGID, uid, gid)
	}
}

// worldWritableDir is a temp dir any container uid can write into (t.TempDir is 0700).
func worldWritableDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}
