package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"net"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// fakeClient plays the engine for one container. The embedded interface is nil: a call the
// fake does not implement panics, so a test proves which calls happen.
type fakeClient struct {
	Client

	mu    sync.Mutex
	calls []string

	pingErr    error
	imageErr   error
	createErr  error
	statErr    error
	stopErr    error
	startErr   error
	created    client.ContainerCreateOptions
	stopOpts   client.ContainerStopOptions
	killOpts   client.ContainerKillOptions
	removeOpts client.ContainerRemoveOptions
	removeCtx  error // ctx.Err() seen by ContainerRemove
	oomKilled  bool

	// frames is the multiplexed attach stream sent once the container starts.
	frames []byte
	// holdStream keeps the attach stream open after the exit (a descendant holding it).
	holdStream bool
	exitCode   int64
	// exitOnStop makes the container run until ContainerStop or ContainerKill.
	exitOnStop bool
	// onStart runs inside ContainerStart.
	onStart func()

	started  chan struct{}
	removed  chan struct{}
	exited   chan struct{}
	exitOnce sync.Once
	server   net.Conn
}

func newFake() *fakeClient {
	return &fakeClient{started: make(chan struct{}), exited: make(chan struct{}), removed: make(chan struct{})}
}

func (f *fakeClient) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

func (f *fakeClient) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeClient) exit() { f.exitOnce.Do(func() { close(f.exited) }) }

func (f *fakeClient) Ping(ctx context.Context, _ client.PingOptions) (client.PingResult, error) {
	f.record("ping")
	return client.PingResult{APIVersion: "1.41"}, f.pingErr
}

func (f *fakeClient) ImageInspect(ctx context.Context, image string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	f.record("image inspect")
	var res client.ImageInspectResult
	res.ID = "sha256:fakeimage"
	res.Config = &dockerspec.DockerOCIImageConfig{}
	res.Config.Labels = map[string]string{LabelCLI: "cline@0.0.0-fake"}
	return res, f.imageErr
}

func (f *fakeClient) ContainerCreate(ctx context.Context, opts client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	f.record("create")
	f.created = opts
	if f.createErr != nil {
		return client.ContainerCreateResult{}, f.createErr
	}
	return client.ContainerCreateResult{ID: "c0ffee"}, nil
}

func (f *fakeClient) ContainerStatPath(ctx context.Context, id string, opts client.ContainerStatPathOptions) (client.ContainerStatPathResult, error) {
	f.record("stat " + opts.Path)
	return client.ContainerStatPathResult{}, f.statErr
}

func (f *fakeClient) ContainerAttach(ctx context.Context, id string, _ client.ContainerAttachOptions) (client.ContainerAttachResult, error) {
	f.record("attach")
	ours, theirs := net.Pipe()
	f.server = theirs
	go func() {
		defer theirs.Close()
		select {
		case <-f.started:
		case <-f.removed: // never started
			return
		}
		if _, err := theirs.Write(f.frames); err != nil {
			return
		}
		<-f.exited
		if f.holdStream {
			_, _ = theirs.Read(make([]byte, 1)) // until the executor closes its end
		}
	}()
	return client.ContainerAttachResult{HijackedResponse: client.NewHijackedResponse(ours, "application/vnd.docker.multiplexed-stream")}, nil
}

// ContainerWait behaves like the real client: an unbuffered result channel whose sender blocks
// until someone receives, an error channel of one.
func (f *fakeClient) ContainerWait(ctx context.Context, id string, opts client.ContainerWaitOptions) client.ContainerWaitResult {
	f.record("wait " + string(opts.Condition))
	resC := make(chan container.WaitResponse)
	errC := make(chan error, 1)
	go func() {
		select {
		case <-f.exited:
		case <-ctx.Done():
			errC <- ctx.Err()
			return
		}
		select {
		case resC <- container.WaitResponse{StatusCode: f.exitCode}:
		case <-ctx.Done():
			errC <- ctx.Err()
		}
	}()
	return client.ContainerWaitResult{Result: resC, Error: errC}
}

func (f *fakeClient) ContainerStart(ctx context.Context, id string, _ client.ContainerStartOptions) (client.ContainerStartResult, error) {
	f.record("start")
	if f.startErr != nil {
		return client.ContainerStartResult{}, f.startErr
	}
	close(f.started)
	if !f.exitOnStop {
		f.exit()
	}
	if f.onStart != nil {
		f.onStart()
	}
	return client.ContainerStartResult{}, nil
}

func (f *fakeClient) ContainerStop(ctx context.Context, id string, opts client.ContainerStopOptions) (client.ContainerStopResult, error) {
	f.record("stop")
	f.stopOpts = opts
	if f.stopErr != nil {
		return client.ContainerStopResult{}, f.stopErr
	}
	f.exit()
	return client.ContainerStopResult{}, nil
}

func (f *fakeClient) ContainerKill(ctx context.Context, id string, opts client.ContainerKillOptions) (client.ContainerKillResult, error) {
	f.record("kill " + opts.Signal)
	f.killOpts = opts
	f.exit()
	return client.ContainerKillResult{}, nil
}

func (f *fakeClient) ContainerInspect(ctx context.Context, id string, _ client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	f.record("inspect")
	var r client.ContainerInspectResult
	r.Container.State = &container.State{ExitCode: int(f.exitCode), OOMKilled: f.oomKilled, Status: "exited"}
	return r, nil
}

func (f *fakeClient) ContainerRemove(ctx context.Context, id string, opts client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	f.record("remove")
	f.removeOpts = opts
	f.removeCtx = ctx.Err()
	f.exit()
	close(f.removed)
	return client.ContainerRemoveResult{}, nil
}

// frame builds one multiplexed stream frame (stream 1 stdout, 2 stderr).
func frame(stream byte, s string) []byte {
	var b bytes.Buffer
	hdr := [8]byte{stream}
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(s)))
	b.Write(hdr[:])
	b.WriteString(s)
	return b.Bytes()
}

var errNotFound = cerrdefs.ErrNotFound.WithMessage("no such object")

var errEngineDown = errors.New("connection refused")

// ServerVersion and Info answer as a rootful Docker engine. They are not recorded: the engine
// is asked once per executor, which the lifecycle call lists need not show (engine_test.go
// covers the detection).
func (f *fakeClient) ServerVersion(ctx context.Context, _ client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return client.ServerVersionResult{Version: "20.10.24"}, nil
}

func (f *fakeClient) Info(ctx context.Context, _ client.InfoOptions) (client.SystemInfoResult, error) {
	return client.SystemInfoResult{}, nil
}
