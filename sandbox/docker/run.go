package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

var _ sandbox.Executor = (*Executor)(nil)

// exitWait bounds how long Run waits for the engine to report the exit after it asked for a
// stop and a kill; only a wedged engine needs it.
const exitWait = 30 * time.Second

// Run executes spec in a fresh container of the executor's image and blocks until the main
// process exited and its output settled:
//
//   - Entrypoint is spec.Path, Cmd is spec.Args (no shell), Env is spec.Env (the engine adds the
//     image's ENV entries the Spec does not set), WorkingDir is spec.Dir, User is spec.User or
//     the caller's uid:gid; stdin is closed.
//   - the engine is pinged (cached briefly) and the image inspected first: an unreachable engine
//     or a missing image is a *sandbox.LaunchError (Missing for the image) and nothing is created.
//   - output is attached before the start, demultiplexed and written to spec.Stdout/spec.Stderr
//     as it arrives (one goroutine, so never concurrently per stream; a nil writer discards; a
//     failing writer stops receiving but the stream is still drained). After the exit Run reads
//     for at most SettleGrace more (Exit.StreamsCut when it had to cut).
//   - when ctx ends first the container is stopped (StopSignal SIGINT, StopGrace rounded up to
//     whole seconds, then SIGKILL by the engine, then an explicit kill if the stop failed) and
//     Exit.Stopped is set with a nil error.
//   - the container is force-removed on every path, with its own timeout, even when ctx was
//     cancelled. An OOM kill sets Exit.OOMKilled and adds one line saying so to spec.Stderr.
//   - Mounts are bind mounts, or in copy mode (WithMounts, or the engine does not see this
//     machine's files) labelled volumes filled before the create and read back after the exit
//     as the Mounts' Return says (after a stop too); the volumes are deleted in the background
//     once the container is gone (Close waits for that).
//
// A non-nil error with a zero Exit means the run did not happen and nothing is left behind; a
// *sandbox.CopyBackError comes with the Exit of a run whose changes could not be brought back.
func (e *Executor) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Exit, error) {
	if err := ctx.Err(); err != nil {
		return sandbox.Exit{}, fmt.Errorf("docker run %s: %w", spec.Path, err)
	}
	runID, err := newRunID()
	if err != nil {
		return sandbox.Exit{}, fmt.Errorf("docker run %s: %w", spec.Path, err)
	}
	if e.track != nil {
		// Tracked before the create: a server that dies while the engine creates the
		// container still has its lifeline remove it.
		defer e.track(runID)()
	}
	opts, err := e.createOptions(spec, runID, nil)
	if err != nil {
		le := &sandbox.LaunchError{Op: "docker spec", Err: err}
		if errors.Is(err, errDockerSocket) {
			le.Hint = "mount only the checkout and the settings copy, never the engine's socket"
		}
		return sandbox.Exit{}, le
	}
	if err := e.Ping(ctx); err != nil {
		return sandbox.Exit{}, err
	}
	if ok, err := e.ImagePresent(ctx); err != nil {
		return sandbox.Exit{}, err
	} else if !ok {
		return sandbox.Exit{}, &sandbox.LaunchError{
			Op: "image inspect", Hint: HintImage, Missing: true,
			Err: fmt.Errorf("image %s not found", e.image),
		}
	}
	eg, err := e.beginEgress(ctx, spec)
	if err != nil {
		return sandbox.Exit{}, err
	}
	defer eg.end(ctx)

	plan, err := e.prepare(ctx, spec, runID)
	if err != nil {
		return sandbox.Exit{}, err
	}
	defer plan.release(ctx, e) // after the container's removal below
	if opts, err = e.createOptions(spec, runID, &plan); err != nil {
		return sandbox.Exit{}, &sandbox.LaunchError{Op: "docker spec", Err: err}
	}
	e.applyEgress(&opts, eg)

	// The create request does not follow ctx: a cancel in mid-request would leave the engine
	// with a container whose id we never learned. After an error anyway (a timeout, a lost
	// connection), whatever carries this run's label is removed.
	cctx, cancelCreate := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	created, err := e.cli.ContainerCreate(cctx, opts)
	cancelCreate()
	if err != nil {
		e.removeRun(ctx, runID)
		return sandbox.Exit{}, e.launchError("docker create", runID, err)
	}
	id := created.ID
	// Cleanup runs in this order: close the stream, wait for the copier (no write after Run
	// returns), release the wait, remove the container.
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	cleanups = append(cleanups, func() { e.remove(ctx, id) })

	// Without this check a missing executable would only show as init's exit 127.
	if err := e.statPath(ctx, id, spec.Path); err != nil {
		return sandbox.Exit{}, err
	}

	// Attach and wait are registered before the start so that no output and no exit is missed.
	// The wait outlives ctx on purpose: after a stop we still want the exit status.
	attached, err := e.cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{
		Stream: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		return sandbox.Exit{}, e.launchError("docker attach", id, err)
	}
	waitCtx, cancelWait := context.WithCancel(context.WithoutCancel(ctx))
	w := newWaiter(e.cli.ContainerWait(waitCtx, id, client.ContainerWaitOptions{
		Condition: container.WaitConditionNextExit,
	}))
	cleanups = append(cleanups, func() {
		cancelWait()
		w.drain()
	})

	streamsDone := make(chan struct{})
	stdout, stderr := writers(spec.Stdout, spec.Stderr)
	go func() {
		defer close(streamsDone)
		_, _ = stdcopy.StdCopy(stdout, stderr, attached.Reader)
	}()
	cleanups = append(cleanups, func() {
		attached.Close()
		<-streamsDone
	})

	if err := ctx.Err(); err != nil {
		return sandbox.Exit{}, fmt.Errorf("docker start %s: %w", id, err)
	}
	// Once asked, the engine may start the container even if we stop listening: the start
	// request does not follow ctx, and a ctx ending from here on is a stop of a started run.
	start := time.Now()
	sctx, cancelStart := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	_, err = e.cli.ContainerStart(sctx, id, client.ContainerStartOptions{})
	cancelStart()
	if err != nil {
		return sandbox.Exit{}, e.launchError("docker start", id, err)
	}

	stopped := false
	code, werr := w.wait(ctx.Done())
	if errors.Is(werr, errCtxDone) {
		stopped = true
		e.stop(ctx, id, sandbox.OrDefault(spec.StopGrace, sandbox.DefaultStopGrace))
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exitWait)
		code, werr = w.wait(tctx.Done())
		cancel()
	}
	if werr != nil {
		// The engine could not tell us the exit: ask it directly before giving up.
		insp, ierr := e.inspect(ctx, id)
		if ierr != nil || insp.State == nil || insp.State.Running {
			return sandbox.Exit{Stopped: stopped}, fmt.Errorf("docker wait %s: %w", id, werr)
		}
		code = insp.State.ExitCode
	}

	cut := false
	settle := time.NewTimer(sandbox.OrDefault(spec.SettleGrace, sandbox.DefaultSettleGrace))
	select {
	case <-streamsDone:
	case <-settle.C:
		cut = true
		attached.Close()
		<-streamsDone
	}
	settle.Stop()

	oom := false
	if code == 128+9 { // only a SIGKILL can be the OOM killer: skip the inspect otherwise
		if insp, err := e.inspect(ctx, id); err == nil && insp.State != nil {
			oom = insp.State.OOMKilled
		}
	}
	x := exitFromStatus(code, oom)
	if oom && spec.Stderr != nil {
		_, _ = fmt.Fprintf(spec.Stderr, "cline-mcp: the container exceeded its memory limit (%d MiB) and was killed\n", e.memory>>20)
	}
	x.Stopped = stopped
	x.StreamsCut = cut
	x.Duration = time.Since(start)
	// Copy-back reads the stopped container: before the removal the egress needs.
	cerr := plan.copyBack(ctx, id)
	if eg != nil {
		e.remove(ctx, id) // before the revoke: nothing of the run may still use its grant
		x.Egress = eg.end(ctx)
	}
	return x, cerr
}

// statPath checks that the executable exists in the created container's file system.
func (e *Executor) statPath(ctx context.Context, id, p string) error {
	_, err := e.cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: p})
	switch {
	case err == nil:
		return nil
	case isNotFound(err):
		return &sandbox.LaunchError{
			Op: "docker stat", Missing: true,
			Hint: fmt.Sprintf("the image %s has no %s: pass the CLI's path inside the image with --docker-cline (default /usr/local/bin/cline), or rebuild it (make image or make image-fake)", e.image, p),
			Err:  fmt.Errorf("executable %s not found in image %s", p, e.image),
		}
	}
	return e.launchError("docker stat", id, err)
}

// stop asks the container to stop (StopSignal, grace, SIGKILL by the engine) and kills it when
// the stop call itself failed. It runs on a context that survives ctx.
func (e *Executor) stop(ctx context.Context, id string, grace time.Duration) {
	secs := int((grace + time.Second - 1) / time.Second)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+cleanupTimeout)
	defer cancel()
	_, err := e.cli.ContainerStop(sctx, id, client.ContainerStopOptions{Timeout: &secs})
	if err == nil || isNotFound(err) {
		return
	}
	_, _ = e.cli.ContainerKill(sctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
}

// remove force-removes the container with its anonymous volumes. It ignores ctx's end on
// purpose; "not found" counts as removed.
func (e *Executor) remove(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = e.cli.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
}

// removeRun force-removes every container labelled with this run's id (best effort).
func (e *Executor) removeRun(ctx context.Context, runID string) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	list, err := e.cli.ContainerList(lctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelRun+"="+runID),
	})
	if err != nil {
		return
	}
	for _, c := range list.Items {
		e.remove(ctx, c.ID)
	}
}

func (e *Executor) inspect(ctx context.Context, id string) (container.InspectResponse, error) {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	r, err := e.cli.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
	return r.Container, err
}

// launchError classifies an engine error of a launch step: a lost connection is the engine
// being down (with its hint), anything else is reported as it is.
func (e *Executor) launchError(op, id string, err error) error {
	if client.IsErrConnectionFailed(err) {
		e.forgetPing()
		return engineError(op, err)
	}
	return fmt.Errorf("%s %s: %w", op, id, err)
}

func engineError(op string, err error) error {
	return &sandbox.LaunchError{Op: op, Hint: HintEngine, Err: err}
}

// errCtxDone is what waiter.wait returns when its done channel fired first.
var errCtxDone = errors.New("done before exit")

// waiter reads a ContainerWait result exactly once. The client's result channel is unbuffered
// and its goroutine blocks until someone receives, so drain must run before Run returns.
type waiter struct {
	res  client.ContainerWaitResult
	done bool
}

func newWaiter(r client.ContainerWaitResult) *waiter { return &waiter{res: r} }

// wait returns the exit code, errCtxDone when stop fired first, or the wait's own error.
func (w *waiter) wait(stop <-chan struct{}) (int, error) {
	if w.done {
		return 0, errors.New("wait already consumed")
	}
	select {
	case r := <-w.res.Result:
		w.done = true
		if r.Error != nil && r.Error.Message != "" {
			return int(r.StatusCode), errors.New(r.Error.Message)
		}
		return int(r.StatusCode), nil
	case err := <-w.res.Error:
		w.done = true
		return 0, err
	case <-stop:
		return 0, errCtxDone
	}
}

// drain lets the client's wait goroutine finish; its context must be cancelled first.
func (w *waiter) drain() {
	if w.done {
		return
	}
	w.done = true
	select {
	case <-w.res.Result:
	case <-w.res.Error:
	}
}

// writers returns the destinations of the two streams: nil discards, a failing writer is
// dropped after its first error so the stream keeps draining, and one writer shared by both
// streams is used by one goroutine only (stdcopy writes from the calling goroutine).
func writers(stdout, stderr io.Writer) (io.Writer, io.Writer) {
	return &sticky{w: stdout}, &sticky{w: stderr}
}

// sticky swallows errors: after the first failed Write it discards everything.
type sticky struct {
	w      io.Writer
	failed bool
}

func (s *sticky) Write(p []byte) (int, error) {
	if s.w == nil || s.failed {
		return len(p), nil
	}
	if _, err := s.w.Write(p); err != nil {
		s.failed = true
	}
	return len(p), nil
}

func newRunID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
