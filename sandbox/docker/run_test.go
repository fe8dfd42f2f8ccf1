package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

func newFakeExecutor(t *testing.T, f *fakeClient, opts ...Option) *Executor {
	t.Helper()
	e, err := New(append([]Option{WithClient(f), WithInstanceID("host-1-2"), WithMounts(MountsBind)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func TestRunOrderConfigAndDemux(t *testing.T) {
	f := newFake()
	f.frames = slices.Concat(frame(1, "out-1\n"), frame(2, "err-1\n"), frame(1, "out-2\n"))
	f.exitCode = 3
	e := newFakeExecutor(t, f)
	var out, errOut bytes.Buffer
	spec := sandbox.Spec{
		Path:   "/usr/local/bin/cline",
		Args:   []string{"--json", "say hi"},
		Env:    []string{"A=1"},
		Dir:    "/src/repo",
		Stdout: &out,
		Stderr: &errOut,
		Mounts: []sandbox.Mount{{Source: "/src/repo", Target: "/src/repo"}, {Source: "/src/repo/.git", Target: "/src/repo/.git", ReadOnly: true}},
		Tmpfs:  []sandbox.Tmpfs{{Target: "/home/cline", SizeMB: 64}, {Target: "/tmp"}},
		Labels: map[string]string{"x": "y"},
	}
	x, err := e.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if x.Code != 3 || x.Signal != "" || x.Stopped || x.StreamsCut {
		t.Errorf("got %+v, want code 3, nothing else", x)
	}
	if out.String() != "out-1\nout-2\n" || errOut.String() != "err-1\n" {
		t.Errorf("got stdout %q stderr %q, want the streams demultiplexed", out.String(), errOut.String())
	}
	wantCalls := []string{"ping", "image inspect", "create", "stat /usr/local/bin/cline", "attach", "wait next-exit", "start", "remove"}
	if got := f.callList(); !slices.Equal(got, wantCalls) {
		t.Errorf("got calls %q, want %q", got, wantCalls)
	}
	if !f.removeOpts.Force || !f.removeOpts.RemoveVolumes {
		t.Errorf("got remove options %+v, want force with volumes", f.removeOpts)
	}
	wantCreatedConfig(t, f.created)
}

// wantCreatedConfig checks the create request of TestRunOrderConfigAndDemux's Spec: the
// command, the labels and every hardening setting.
func wantCreatedConfig(t *testing.T, created client.ContainerCreateOptions) {
	t.Helper()
	cfg, host := created.Config, created.HostConfig
	me := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	checks := []struct {
		name      string
		got, want any
	}{
		{"image", cfg.Image, DefaultImage},
		{"entrypoint", cfg.Entrypoint, []string{"/usr/local/bin/cline"}},
		{"cmd", cfg.Cmd, []string{"--json", "say hi"}},
		{"env", cfg.Env, []string{"A=1"}},
		{"workdir", cfg.WorkingDir, "/src/repo"},
		{"user", cfg.User, me},
		{"stop signal", cfg.StopSignal, "SIGINT"},
		{"stdin", cfg.OpenStdin || cfg.AttachStdin || cfg.Tty, false},
		{"label x", cfg.Labels["x"], "y"},
		{"label instance", cfg.Labels[LabelInstance], "host-1-2"},
		{"label run set", len(cfg.Labels[LabelRun]), 16},
		{"readonly rootfs", host.ReadonlyRootfs, true},
		{"cap drop", host.CapDrop, []string{"ALL"}},
		{"cap add", len(host.CapAdd), 0},
		{"security opt", host.SecurityOpt, []string{"no-new-privileges"}},
		{"privileged", host.Privileged, false},
		{"auto remove", host.AutoRemove, false},
		{"init", host.Init != nil && *host.Init, true},
		{"network", host.NetworkMode, container.NetworkMode("bridge")},
		{"memory", host.Memory, int64(DefaultMemory)},
		{"memory swap", host.MemorySwap, int64(DefaultMemory)},
		{"cpus", host.NanoCPUs, int64(DefaultNanoCPUs)},
		{"pids", host.PidsLimit != nil && *host.PidsLimit == DefaultPidsLimit, true},
		{"log driver", host.LogConfig.Type, "none"},
		{"binds", len(host.Binds), 0},
		{"tmpfs home", host.Tmpfs["/home/cline"], fmt.Sprintf("rw,exec,nosuid,nodev,size=64m,mode=0700,uid=%d,gid=%d", os.Getuid(), os.Getgid())},
		{"tmpfs tmp", host.Tmpfs["/tmp"], "rw,exec,nosuid,nodev,size=256m,mode=1777"},
		{"mounts", host.Mounts, []mount.Mount{
			{Type: mount.TypeBind, Source: "/src/repo", Target: "/src/repo", BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}},
			{Type: mount.TypeBind, Source: "/src/repo/.git", Target: "/src/repo/.git", ReadOnly: true, BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}},
		}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) && fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, s := range host.SecurityOpt {
		if strings.Contains(s, "unconfined") {
			t.Errorf("got security opt %q, want the default seccomp/apparmor kept", s)
		}
	}
}

func TestRunOptionsApplied(t *testing.T) {
	f := newFake()
	e := newFakeExecutor(t, f, WithImage("img:1"), WithNetwork("none"), WithMemory(512<<20), WithPidsLimit(64), WithCPUs(0.5))
	if _, err := e.Run(t.Context(), sandbox.Spec{Path: "/bin/x", User: "12345:23456", Tmpfs: []sandbox.Tmpfs{{Target: "/home/u"}}}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	cfg, host := f.created.Config, f.created.HostConfig
	got := fmt.Sprint(cfg.Image, host.NetworkMode, host.Memory, *host.PidsLimit, host.NanoCPUs, cfg.User, host.Tmpfs["/home/u"])
	want := fmt.Sprint("img:1", "none", 512<<20, 64, 500_000_000, "12345:23456", "rw,exec,nosuid,nodev,size=256m,mode=0700,uid=12345,gid=23456")
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestRunReportsWhatWasCreated: the Exit's ContainerReport is read from the create request the
// engine got (after the egress mode changed it) and the image the run inspected.
func TestRunReportsWhatWasCreated(t *testing.T) {
	f := newFake()
	e := newFakeExecutor(t, f, WithImage("img:1"), WithNetwork("none"), WithEgress(Egress{Mode: sandbox.EgressNone}), WithPidsLimit(64))
	x, err := e.Run(t.Context(), sandbox.Spec{Path: "/bin/x", User: "1000:1000", Tmpfs: []sandbox.Tmpfs{{Target: "/tmp"}},
		Mounts: []sandbox.Mount{{Source: "/src/repo", Target: "/src/repo", ReadOnly: true}, {Source: "/src/data", Target: "/data"}}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	c := x.Container
	if c == nil {
		t.Fatal("no ContainerReport")
	}
	got := fmt.Sprint(c.Engine, c.Image, c.ImageID, c.CLI, c.User, c.ReadOnlyRoot, c.CapDrop, c.NoNewPrivileges, c.Privileged, c.Network, c.Egress, c.PidsLimit, c.Mounts)
	want := fmt.Sprint("docker", "img:1", "sha256:fakeimage", "cline@0.0.0-fake", "1000:1000", true, []string{"ALL"}, true, false, "none", sandbox.EgressNone, 64,
		[]sandbox.MountReport{{Target: "/data", Kind: "bind"}, {Target: "/src/repo", ReadOnly: true, Kind: "bind"}, {Target: "/tmp", Kind: "tmpfs"}})
	if got != want {
		t.Errorf("report\n got %s\nwant %s", got, want)
	}
	if h := f.created.HostConfig; c.Network != string(h.NetworkMode) || c.MemoryBytes != h.Memory {
		t.Errorf("the report says %s/%d, the create request %s/%d", c.Network, c.MemoryBytes, h.NetworkMode, h.Memory)
	}
}

func TestRunStopOnContextEnd(t *testing.T) {
	tests := []struct {
		name      string
		stopErr   error
		exitCode  int64
		wantCalls []string
		wantSig   string
	}{
		{"stop works", nil, 130, []string{"start", "stop", "remove"}, "SIGINT"},
		{"stop fails: kill", errors.New("stop broke"), 137, []string{"start", "stop", "kill SIGKILL", "inspect", "remove"}, "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.exitOnStop = true
			f.stopErr = tt.stopErr
			f.exitCode = tt.exitCode
			ctx, cancel := context.WithCancel(t.Context())
			f.onStart = cancel
			e := newFakeExecutor(t, f)
			x, err := e.Run(ctx, sandbox.Spec{Path: "/bin/x", StopGrace: 1500 * time.Millisecond})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !x.Stopped || x.Code != int(tt.exitCode) || x.Signal != tt.wantSig {
				t.Errorf("got %+v, want Stopped code %d signal %s", x, tt.exitCode, tt.wantSig)
			}
			calls := f.callList()
			if i := slices.Index(calls, "start"); i < 0 || !slices.Equal(calls[i:], tt.wantCalls) {
				t.Errorf("got calls %q, want them to end with %q", calls, tt.wantCalls)
			}
			if f.stopOpts.Timeout == nil || *f.stopOpts.Timeout != 2 {
				t.Errorf("got stop timeout %v, want 2 s (1.5 s rounded up)", f.stopOpts.Timeout)
			}
			if f.removeCtx != nil {
				t.Errorf("got remove called with a done ctx (%v), want a live one", f.removeCtx)
			}
		})
	}
}

func TestRunStreamsCut(t *testing.T) {
	f := newFake()
	f.frames = frame(1, "partial\n")
	f.holdStream = true
	e := newFakeExecutor(t, f)
	var out bytes.Buffer
	x, err := e.Run(t.Context(), sandbox.Spec{Path: "/bin/x", Stdout: &out, SettleGrace: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !x.StreamsCut || out.String() != "partial\n" {
		t.Errorf("got %+v stdout %q, want StreamsCut and the partial output", x, out.String())
	}
}

func TestRunOOMKilled(t *testing.T) {
	f := newFake()
	f.exitCode = 137
	f.oomKilled = true
	e := newFakeExecutor(t, f, WithMemory(64<<20))
	var errOut bytes.Buffer
	x, err := e.Run(t.Context(), sandbox.Spec{Path: "/bin/x", Stderr: &errOut})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !x.OOMKilled || x.Signal != "SIGKILL" || x.Code != 137 {
		t.Errorf("got %+v, want OOMKilled SIGKILL 137", x)
	}
	if !strings.Contains(errOut.String(), "memory limit (64 MiB)") {
		t.Errorf("got stderr %q, want the OOM said", errOut.String())
	}
}

func TestRunLaunchErrors(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(*fakeClient)
		wantOp      string
		wantMissing bool
		wantHint    string
		wantCalls   []string
	}{
		{"engine down", func(f *fakeClient) { f.pingErr = errEngineDown }, "docker ping", false, HintEngine, []string{"ping"}},
		{"image missing", func(f *fakeClient) { f.imageErr = errNotFound }, "image inspect", true, HintImage, []string{"ping", "image inspect"}},
		{"executable missing", func(f *fakeClient) { f.statErr = errNotFound }, "docker stat", true, "rebuild it", []string{"ping", "image inspect", "create", "stat /bin/x", "remove"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			tt.setup(f)
			e := newFakeExecutor(t, f)
			_, err := e.Run(t.Context(), sandbox.Spec{Path: "/bin/x"})
			var le *sandbox.LaunchError
			if !errors.As(err, &le) || le.Op != tt.wantOp || le.Missing != tt.wantMissing || !strings.Contains(le.Hint, tt.wantHint) {
				t.Fatalf("got %#v, want LaunchError op %q missing %v hint %q", err, tt.wantOp, tt.wantMissing, tt.wantHint)
			}
			if got := f.callList(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("got calls %q, want %q", got, tt.wantCalls)
			}
		})
	}
}

func TestPingCached(t *testing.T) {
	f := newFake()
	e := newFakeExecutor(t, f)
	for range 3 {
		if err := e.Ping(t.Context()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	}
	if got := f.callList(); len(got) != 1 {
		t.Errorf("got calls %q, want one ping", got)
	}
}

func TestRunRefusesBadSpecWithoutCallingTheEngine(t *testing.T) {
	tests := []struct {
		name string
		spec sandbox.Spec
	}{
		{"docker socket", sandbox.Spec{Path: "/bin/x", Mounts: []sandbox.Mount{{Source: "/var/run/docker.sock", Target: "/var/run/docker.sock"}}}},
		{"root of the host", sandbox.Spec{Path: "/bin/x", Mounts: []sandbox.Mount{{Source: "/", Target: "/host"}}}},
		{"relative path", sandbox.Spec{Path: "cline"}},
		{"named user", sandbox.Spec{Path: "/bin/x", User: "node"}},
		{"relative mount", sandbox.Spec{Path: "/bin/x", Mounts: []sandbox.Mount{{Source: "repo", Target: "/repo"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// An empty fake: any engine call panics.
			e := newFakeExecutor(t, &fakeClient{})
			_, err := e.Run(t.Context(), tt.spec)
			if !sandbox.IsLaunchError(err) {
				t.Fatalf("got %v, want a LaunchError", err)
			}
		})
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	e := newFakeExecutor(t, &fakeClient{})
	if _, err := e.Run(ctx, sandbox.Spec{Path: "/bin/x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
