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

// containerAPI is what the executor calls on the engine for one container's life: create,
// attach, start, wait, stop, inspect and remove (Run, the mount probe, the egress proxy), and
// list what carries a label (cleanup after a failed create, the sweep).
type containerAPI interface {
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerAttach(ctx context.Context, id string, options client.ContainerAttachOptions) (client.ContainerAttachResult, error)
	ContainerWait(ctx context.Context, id string, options client.ContainerWaitOptions) client.ContainerWaitResult
	ContainerStatPath(ctx context.Context, id string, options client.ContainerStatPathOptions) (client.ContainerStatPathResult, error)
	ContainerStart(ctx context.Context, id string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerStop(ctx context.Context, id string, options client.ContainerStopOptions) (client.ContainerStopResult, error)
	ContainerKill(ctx context.Context, id string, options client.ContainerKillOptions) (client.ContainerKillResult, error)
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
}

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
	img, err := e.admit(ctx, spec, runID)
	if err != nil {
		return sandbox.Exit{}, err
	}
	eg, err := e.beginEgress(ctx, spec)
	if err != nil {
		return sandbox.Exit{}, err
	}
	defer eg.end(ctx)

	plan, err := e.prepare(ctx, spec, runID, true)
	if err != nil {
		return sandbox.Exit{}, err
	}
	defer plan.release(ctx, e) // after the container's removal below
	if e.warm != nil {
		defer e.learnSpec(spec, runID, &plan, eg, img.id) // the next calls' shape, warmed after this one
	}
	if x, err, ok := e.runWarm(ctx, spec, runID, &plan, eg, img); ok {
		return x, err
	}
	if plan.warmOnly() {
		// The warm container did not take it: volumes of its own, under the same names as the
		// first plan's, which are removed first.
		plan.copies.cleanup(ctx)
		if plan, err = e.prepare(ctx, spec, runID, false); err != nil {
			return sandbox.Exit{}, err
		}
	}
	c, err := e.create(ctx, spec, runID, &plan, eg)
	if err != nil {
		return sandbox.Exit{}, err
	}
	c.report.Image, c.report.ImageID, c.report.CLI = e.image, img.id, img.cli
	c.report.CredentialOutside = eg.keepsCredential()
	defer c.cleanup(ctx)
	if spec.Started != nil {
		spec.Started(c.report)
	}
	eg.live(spec)
	if plan.copies != nil && spec.Sync != nil {
		spec.Sync(copySync{cs: plan.copies, id: c.id})
	}
	// Without this check a missing executable would only show as init's exit 127.
	if err := e.statPath(ctx, c.id, spec.Path); err != nil {
		return sandbox.Exit{}, err
	}
	if err := c.attach(ctx, spec); err != nil {
		return sandbox.Exit{}, err
	}
	start, err := c.start(ctx)
	if err != nil {
		return sandbox.Exit{}, err
	}
	code, stopped, err := c.wait(ctx, spec)
	if err != nil {
		return sandbox.Exit{Stopped: stopped}, err
	}
	x := c.collect(ctx, spec, code)
	x.Container = &c.report
	x.Stopped = stopped
	x.Duration = time.Since(start)
	// Copy-back reads the stopped container: before the removal the egress needs.
	cerr := plan.copyBack(ctx, c.id)
	if eg != nil {
		e.remove(ctx, c.id) // before the revoke: nothing of the run may still use its grant
		x.Egress = eg.end(ctx)
	}
	return x, cerr
}

// admit checks the Spec (before the engine is asked anything), that the engine answers (the
// ping is cached briefly) and that the image exists: a run that fails here leaves nothing.
func (e *Executor) admit(ctx context.Context, spec sandbox.Spec, runID string) (imageInfo, error) {
	if _, err := e.createOptions(spec, runID, nil); err != nil {
		le := &sandbox.LaunchError{Op: "docker spec", Err: err}
		if errors.Is(err, errDockerSocket) {
			le.Hint = "mount only the checkout and the settings copy, never the engine's socket"
		}
		return imageInfo{}, le
	}
	if err := e.Ping(ctx); err != nil {
		return imageInfo{}, err
	}
	img, ok, err := e.inspectImage(ctx)
	if err != nil {
		return imageInfo{}, err
	} else if !ok {
		return imageInfo{}, &sandbox.LaunchError{
			Op: "image inspect", Hint: HintImage, Missing: true,
			Err: fmt.Errorf("image %s not found", e.image),
		}
	}
	return img, nil
}

// runContainer is one run's container from its create to its removal: the attached output
// streams, the copier that demultiplexes them, and the wait for its exit.
type runContainer struct {
	e  *Executor
	id string

	// report is what the create request enforced (reportOf), completed with the image.
	report sandbox.ContainerReport

	attached    client.ContainerAttachResult
	streamsDone chan struct{} // closed when the copier returned; nil before attach
	w           *waiter
	cancelWait  context.CancelFunc
}

// create builds the container of spec with the plan's user mapping and mounts and the run's
// egress. The create request does not follow ctx: a cancel in mid-request would leave the engine
// with a container whose id we never learned. After an error anyway (a timeout, a lost
// connection), whatever carries this run's label is removed.
func (e *Executor) create(ctx context.Context, spec sandbox.Spec, runID string, plan *runPlan, eg *runEgress) (*runContainer, error) {
	if plan.warmOnly() { // its own directories have no volumes: an engine would make empty ones
		return nil, &sandbox.LaunchError{Op: "docker spec", Err: errors.New("a plan for a warm container cannot create one")}
	}
	opts, err := e.createOptions(spec, runID, plan)
	if err != nil {
		return nil, &sandbox.LaunchError{Op: "docker spec", Err: err}
	}
	e.applyEgress(&opts, eg)
	cctx, cancelCreate := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	created, err := e.cli.ContainerCreate(cctx, opts)
	cancelCreate()
	if err != nil {
		e.removeRun(ctx, runID)
		return nil, e.launchError("docker create", runID, err)
	}
	return &runContainer{e: e, id: created.ID, report: e.reportOf(opts, plan)}, nil
}

// attach registers the output streams and the wait before the start, so that no output and no
// exit is missed, and starts copying the output to spec's writers. The wait outlives ctx on
// purpose: after a stop we still want the exit status.
func (c *runContainer) attach(ctx context.Context, spec sandbox.Spec) error {
	attached, err := c.e.cli.ContainerAttach(ctx, c.id, client.ContainerAttachOptions{
		Stream: true, Stdout: true, Stderr: true, Stdin: spec.Stdin != nil,
	})
	if err != nil {
		return c.e.launchError("docker attach", c.id, err)
	}
	c.attached = attached
	waitCtx, cancelWait := context.WithCancel(context.WithoutCancel(ctx))
	c.w = newWaiter(c.e.cli.ContainerWait(waitCtx, c.id, client.ContainerWaitOptions{
		Condition: container.WaitConditionNextExit,
	}))
	c.cancelWait = cancelWait

	c.pipe(spec)
	return nil
}

// start starts the container and returns when it was asked to. Once asked, the engine may start
// the container even if we stop listening: the start request does not follow ctx, and a ctx
// ending from here on is a stop of a started run.
// pipe copies the attached process's multiplexed output to spec's writers (streamsDone closes
// when it ends) and spec.Stdin to the process. The reader's EOF closes the process's stdin
// (StdinOnce); after the run the connection is closed (cleanup), so a copy still waiting ends at
// the reader's next read — the caller closes its writer.
func (c *runContainer) pipe(spec sandbox.Spec) {
	c.streamsDone = make(chan struct{})
	stdout, stderr := writers(spec.Stdout, spec.Stderr)
	go func() {
		defer close(c.streamsDone)
		_, _ = stdcopy.StdCopy(stdout, stderr, c.attached.Reader)
	}()
	if spec.Stdin != nil {
		go func() {
			_, _ = io.Copy(c.attached.Conn, spec.Stdin)
			_ = c.attached.CloseWrite()
		}()
	}
}

func (c *runContainer) start(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("docker start %s: %w", c.id, err)
	}
	start := time.Now()
	sctx, cancelStart := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	_, err := c.e.cli.ContainerStart(sctx, c.id, client.ContainerStartOptions{})
	cancelStart()
	if err != nil {
		return time.Time{}, c.e.launchError("docker start", c.id, err)
	}
	return start, nil
}

// wait returns the exit code of the main process. When ctx ends first it stops the container
// (stopped is true) and waits for the exit a while longer; when the engine cannot report the
// exit it asks the container's state before giving up.
func (c *runContainer) wait(ctx context.Context, spec sandbox.Spec) (code int, stopped bool, err error) {
	code, werr := c.w.wait(ctx.Done())
	if errors.Is(werr, errCtxDone) {
		stopped = true
		c.e.stop(ctx, c.id, sandbox.OrDefault(spec.StopGrace, sandbox.DefaultStopGrace))
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exitWait)
		code, werr = c.w.wait(tctx.Done())
		cancel()
	}
	if werr != nil {
		insp, ierr := c.e.inspect(ctx, c.id)
		if ierr != nil || insp.State == nil || insp.State.Running {
			return 0, stopped, fmt.Errorf("docker wait %s: %w", c.id, werr)
		}
		code = insp.State.ExitCode
	}
	return code, stopped, nil
}

// collect lets the output settle (for at most spec.SettleGrace after the exit) and turns the
// exit code into an Exit, telling an OOM kill (on spec.Stderr too).
func (c *runContainer) collect(ctx context.Context, spec sandbox.Spec, code int) sandbox.Exit {
	cut := false
	settle := time.NewTimer(sandbox.OrDefault(spec.SettleGrace, sandbox.DefaultSettleGrace))
	select {
	case <-c.streamsDone:
	case <-settle.C:
		cut = true
		c.attached.Close()
		<-c.streamsDone
	}
	settle.Stop()

	oom := false
	if code == 128+9 { // only a SIGKILL can be the OOM killer: skip the inspect otherwise
		if insp, err := c.e.inspect(ctx, c.id); err == nil && insp.State != nil {
			oom = insp.State.OOMKilled
		}
	}
	x := sandbox.ExitFromStatus(code, oom)
	if oom && spec.Stderr != nil {
		_, _ = fmt.Fprintf(spec.Stderr, "cline-mcp: the container exceeded its memory limit (%d MiB) and was killed\n", c.e.memory>>20)
	}
	x.StreamsCut = cut
	return x
}

// cleanup runs on every path, in this order: close the stream, wait for the copier (no write
// after Run returns), release the wait, remove the container (ignoring ctx's end).
func (c *runContainer) cleanup(ctx context.Context) {
	if c.streamsDone != nil {
		c.attached.Close()
		<-c.streamsDone
	}
	if c.w != nil {
		c.cancelWait()
		c.w.drain()
	}
	c.e.remove(ctx, c.id)
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
