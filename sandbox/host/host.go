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
package host

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Executor runs specs as child processes of this process. The zero value is ready to use; it
// holds no state, so one Executor is safe for any number of concurrent Run calls.
type Executor struct{}

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
	stopGrace := orDefault(spec.StopGrace, sandbox.DefaultStopGrace)
	settleGrace := orDefault(spec.SettleGrace, sandbox.DefaultSettleGrace)

	outR, outW, err := os.Pipe()
	if err != nil {
		return sandbox.Exit{}, fmt.Errorf("stdout pipe %s: %w", spec.Path, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return sandbox.Exit{}, fmt.Errorf("stderr pipe %s: %w", spec.Path, err)
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
	prepare(cmd)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		closeAll(outR, outW, errR, errW)
		return sandbox.Exit{}, classifyStart(spec, path, err)
	}
	// The child holds its own copies; ours must go or EOF never comes.
	closeAll(outW, errW)

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

	streamsDone := pumpStreams(spec.Stdout, spec.Stderr, outR, errR)

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
	case <-streamsDone:
	case <-settle.C:
		cut = true
	}
	settle.Stop()
	// Nothing we started may outlive Run. On Linux the main process is still an unreaped
	// zombie here, so its process group id cannot have been reused.
	g.kill()
	closeAll(outR, errR) // unblocks the pumps when a descendant still holds the pipes
	<-streamsDone

	if !reaped {
		_ = cmd.Wait() // the exit status is in cmd.ProcessState; a non-zero exit is no error here
	}
	x := g.exit(cmd.ProcessState)
	x.Stopped = stopped
	x.StreamsCut = cut
	x.Duration = time.Since(start)
	return x, nil
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

// pumpStreams copies both pipes to their writers, one goroutine each, and closes the returned
// channel once both reached EOF or were closed.
func pumpStreams(stdout, stderr io.Writer, outR, errR io.Reader) <-chan struct{} {
	if stdout != nil && stderr != nil && sameWriter(stdout, stderr) {
		// Like os/exec: one writer for both streams gets one Write at a time.
		w := &lockedWriter{w: stdout}
		stdout, stderr = w, w
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go pump(&wg, stdout, outR)
	go pump(&wg, stderr, errR)
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

func pump(wg *sync.WaitGroup, w io.Writer, r io.Reader) {
	defer wg.Done()
	if w == nil {
		w = io.Discard
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				// Keep draining so the child never blocks on a full pipe.
				w = io.Discard
			}
		}
		if err != nil {
			return
		}
	}
}

// bufPool recycles the pumps' read buffers across runs.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 32*1024)
	return &b
}}

// sameWriter reports a == b without panicking on uncomparable dynamic types.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
