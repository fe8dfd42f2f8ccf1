// Package host owns running the Cline executable as a child process on this machine. It is the
// only package of cline-mcp that execs Cline on the host: it implements sandbox.Executor with
// os/exec, without a shell, with stdin on the null device and the child's stdout/stderr streamed
// to the caller's writers.
//
// Everything a run starts is kept in one place so it can be stopped as a whole: a process group
// on Unix (Setpgid), a Job Object on Windows. When ctx ends the executor asks politely (SIGINT
// to the group — the real CLI exits cleanly on SIGINT but ignores a single SIGTERM while a model
// call is pending; CTRL_BREAK on Windows), waits Spec.StopGrace, then kills the whole group or
// job. After the main process exited, whatever is left of the group is killed too.
//
// Limits: a descendant that leaves the process group (setsid, setpgid) is out of reach on Unix;
// if it holds stdout/stderr open, Run still returns SettleGrace after the main process exited
// (Exit.StreamsCut) but the descendant keeps running. The bridge runs the CLI with
// CLINE_SESSION_BACKEND_MODE=local so it never spawns its detached hub daemon. On Windows a Job
// Object holds every descendant that did not explicitly break away.
//
// A cut never drops what the child already wrote: the pipes are drained of their buffered
// bytes before the pumps stop (on Unix; on Windows the pipes are closed). Under heavy fork load
// in this process, a concurrently started sibling can hold an inherited pipe end until its own
// exec, so StreamsCut may occasionally be set with nothing left running.
package host

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Executor runs specs as child processes of this process. The zero value is ready to use; it
// holds no state, so one Executor is safe for any number of concurrent Run calls.
type Executor struct {
	// Track, when set, is told the process group of every run right after it started and is
	// untracked once nothing of the group is left (sandbox/lifeline: a watchdog kills the groups
	// still tracked when the server dies). Not called on Windows, where the Job Object of each
	// run already dies with the server.
	Track func(pgid int) (untrack func())
}

// New returns a host executor.
func New() *Executor { return &Executor{} }

var _ sandbox.Executor = (*Executor)(nil)

// Run starts spec.Path with spec.Args, the environment exactly spec.Env (nothing of the
// server's own environment is added; a nil Env means an empty one) and spec.Dir, and blocks
// until the child exited and its output settled:
//
//   - stdout and stderr are copied to spec.Stdout and spec.Stderr as they arrive, one goroutine
//     per stream; a nil writer discards. If a writer fails, the stream is still drained (so the
//     child never blocks on a full pipe) but nothing more is written to it. No write happens
//     after Run returns.
//   - settlement waits for the main process to exit and for both streams to reach EOF; if a
//     descendant keeps them open, Run stops waiting SettleGrace after the exit, closes them and
//     sets Exit.StreamsCut.
//   - when ctx ends first, the run is stopped (polite stop, StopGrace, kill of the whole group)
//     and Exit.Stopped is set; the error is nil.
//
// A non-nil error means nothing was started (and nothing is left running): a *sandbox.LaunchError
// when the cause is on the user's side (missing executable, not executable, bad working
// directory), ctx's error when ctx was already done, or a wrapped system error.
func (e *Executor) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Exit, error) {
	if err := ctx.Err(); err != nil {
		return sandbox.Exit{}, fmt.Errorf("start %s: %w", spec.Path, err)
	}
	path, err := resolve(spec)
	if err != nil {
		return sandbox.Exit{}, err
	}
	stopGrace := sandbox.OrDefault(spec.StopGrace, sandbox.DefaultStopGrace)
	settleGrace := sandbox.OrDefault(spec.SettleGrace, sandbox.DefaultSettleGrace)

	cmd, p, err := start(spec, path)
	if err != nil {
		return sandbox.Exit{}, err
	}
	outR, errR := p.outR, p.errR
	began := time.Now()
	p.feed(spec.Stdin)

	g, err := attach(cmd)
	if err != nil {
		// The child may be running (or suspended) outside of any group we control: kill it
		// directly and reap it before reporting.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		closeAll(outR, errR)
		return sandbox.Exit{}, fmt.Errorf("start %s: %w", spec.Path, err)
	}
	defer g.close()
	if id := g.id(); id > 0 && e.Track != nil {
		defer e.Track(id)() // deferred calls run after the group was killed below
	}

	out := startStreams(spec.Stdout, spec.Stderr, outR, errR)
	defer out.close()

	exited := make(chan struct{})
	var reaped bool
	go func() {
		reaped = g.awaitExit()
		close(exited)
	}()

	stopped := waitOrStop(ctx, g, exited, stopGrace)

	// Settlement: the grace counts from the exit, not from ctx's end.
	cut := false
	settle := time.NewTimer(settleGrace)
	select {
	case <-out.done:
	case <-settle.C:
		cut = true
	}
	settle.Stop()
	// Nothing we started may outlive Run. On Linux the main process is still an unreaped
	// zombie here, so its process group id cannot have been reused.
	g.kill()
	if cut {
		out.cut() // delivers what is already in the pipes, then stops reading
	}

	if !reaped {
		_ = cmd.Wait() // the exit status is in cmd.ProcessState; a non-zero exit is no error here
	}
	p.closeStdin() // the child is gone: a copy still writing fails and ends
	x := g.exit(cmd.ProcessState)
	x.Stopped = stopped
	x.StreamsCut = cut
	x.Duration = time.Since(began)
	return x, nil
}

// pipes are a child's stdout and stderr (read ends), and its attached stdin (write end, nil when
// the child's stdin is the null device).
type pipes struct {
	outR, errR *os.File
	inW        *os.File
}

// start creates the pipes and starts the child: stdout and stderr pipes, and stdin on the null
// device — or, with spec.Stdin (the Agent Client Protocol), a pipe that feed fills from it.
func start(spec sandbox.Spec, path string) (*exec.Cmd, *pipes, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("stdout pipe %s: %w", spec.Path, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, nil, fmt.Errorf("stderr pipe %s: %w", spec.Path, err)
	}
	env := spec.Env
	if env == nil {
		env = []string{} // exec.Cmd would fall back to os.Environ() for nil
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   append([]string{spec.Path}, spec.Args...),
		Env:    env,
		Dir:    spec.Dir,
		Stdin:  nil, // os/exec opens os.DevNull: never a pipe the CLI would wait on
		Stdout: outW,
		Stderr: errW,
	}
	p := &pipes{outR: outR, errR: errR}
	var inR *os.File
	if spec.Stdin != nil {
		if inR, p.inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return nil, nil, fmt.Errorf("stdin pipe %s: %w", spec.Path, err)
		}
		cmd.Stdin = inR
	}
	prepare(cmd)
	if err := cmd.Start(); err != nil {
		closeAll(outR, outW, errR, errW)
		if inR != nil {
			closeAll(inR, p.inW)
		}
		return nil, nil, classifyStart(spec, path, err)
	}
	// The child holds its own copies; ours must go or EOF never comes.
	closeAll(outW, errW)
	if inR != nil {
		closeAll(inR)
	}
	return cmd, p, nil
}

// feed copies src into the child's stdin until src ends (its EOF closes the child's stdin) or the
// pipe closes (closeStdin, after the child exited; the copy then ends at src's next read — the
// caller closes its writer).
func (p *pipes) feed(src io.Reader) {
	if p.inW == nil {
		return
	}
	go func() {
		_, _ = io.Copy(p.inW, src)
		_ = p.inW.Close()
	}()
}

func (p *pipes) closeStdin() {
	if p.inW != nil {
		_ = p.inW.Close()
	}
}

// group is everything one run started, as the platform can hold it: a process group on Unix, a
// Job Object on Windows. Created by attach right after Start; close releases it.
type group interface {
	// awaitExit blocks until the main process exited. It reports whether it also reaped it
	// (cmd.Wait already done); where the platform allows, it does not, so that kill still
	// addresses the right group.
	awaitExit() (reaped bool)
	// interrupt is the polite stop: SIGINT to the group, CTRL_BREAK on Windows.
	interrupt() error
	// kill forcibly ends every process left in the group; it is idempotent.
	kill()
	// exit turns the reaped state into an Exit (Code, Signal).
	exit(*os.ProcessState) sandbox.Exit
	close()
	// id is the process group id to track for the lifeline; 0 where a Job Object does the job.
	id() int
}

// waitOrStop waits for the main process to exit. When ctx ends first it stops the group: the
// polite stop, then after stopGrace the kill. It reports whether it stopped the run.
func waitOrStop(ctx context.Context, g group, exited <-chan struct{}, stopGrace time.Duration) bool {
	select {
	case <-exited:
		return false
	case <-ctx.Done():
	}
	if err := g.interrupt(); err != nil {
		// No way to ask politely (e.g. no console on Windows): do not wait for nothing.
		g.kill()
		<-exited
		return true
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-exited:
	case <-grace.C:
		g.kill()
		<-exited
	}
	return true
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
