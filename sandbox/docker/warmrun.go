package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// launchName is the file in a warm container's slot that the waiter runs at the claim: the
// call's environment, working directory and argv, written by the host into its private slot.
const launchName = ".cline-mcp-launch"

// waiterCmd is the main process of a warm container until its claim: the image's shell, blocked
// reading one line from the container's stdin (open, written by nobody before the claim). At the
// claim the line comes and the shell runs the launch file in the slot, which execs the CLI: the
// CLI is then the container's only program, the child of its init, as in a new container. Both
// images (images/cline, images/fake-cline) have /bin/sh; an image without it fails the warm
// create and every call starts cold.
func waiterCmd(slot string) []string {
	return []string{"/bin/sh", "-c", "IFS= read -r go && . " + shQuote(filepath.Join(slot, launchName))}
}

// runWarm runs spec in the reserved warm container whose slot holds the Spec's per-call Mounts,
// when the rest of its create request is the one that container was created with (ok true).
// Otherwise ok is false and nothing happened: the caller starts a container of its own.
//
// The CLI runs with the call's argv (the egress forwarder's wrapping included), environment,
// working directory, user and stdin: exactly the entrypoint, command, Env, WorkingDir and User
// the cold create request would carry, in a container whose every other setting is that
// request's (the shape compares them). It is exec'd by the waiter, so it is the container's
// main program: when it exits, the container's init exits and the kernel ends every process it
// left (the wait returns after that, as for a new container); a stop is a new container's stop.
// The container is removed in the background: it is never used again.
func (e *Executor) runWarm(ctx context.Context, spec sandbox.Spec, runID string, plan *runPlan, eg *runEgress, img imageInfo) (_ sandbox.Exit, _ error, ok bool) {
	if e.warm == nil || plan.copies != nil && !plan.warmOnly() {
		return sandbox.Exit{}, nil, false
	}
	opts, err := e.createOptions(spec, runID, plan)
	if err != nil {
		return sandbox.Exit{}, nil, false // the cold path reports it
	}
	e.applyEgress(&opts, eg)
	script, ok := launchScript(opts.Config, spec.Stdin != nil)
	if !ok {
		return sandbox.Exit{}, nil, false
	}
	w := e.claim(opts, img.id)
	if w == nil {
		return sandbox.Exit{}, nil, false
	}
	// Off the call's critical path, never reused: a run may have changed anything in it.
	defer e.background.Go(func() { e.discard(w) })
	report := e.reportOf(opts, plan)
	report.Image, report.ImageID, report.CLI = e.image, img.id, img.cli
	report.CredentialOutside = eg.keepsCredential()
	if w.cli != spec.Path { // else found there at its create
		if err := e.statPath(ctx, w.id, spec.Path); err != nil {
			return sandbox.Exit{}, err, true
		}
	}
	c := &runContainer{e: e, id: w.id, report: report}
	defer c.release()
	if spec.Started != nil {
		spec.Started(c.report)
	}
	eg.live(spec)
	put := func() error { return writeLaunch(w.slot, script) }
	if cs := plan.copies; cs != nil {
		if spec.Sync != nil {
			spec.Sync(copySync{cs: cs, id: w.id})
		}
		put = func() error {
			if err := cs.fillSlot(ctx, w.id, w.slot, script, plan.id.user); err != nil {
				return c.e.copyError(ctx, "copy the call's files into the container", w.id, err)
			}
			return nil
		}
	}
	started, err := c.launch(ctx, spec, put)
	if err != nil && !started {
		// The call's files or the launch file could not be put in, or the container not
		// attached (its waiter ended before the claim): nothing ran, the call starts cold.
		return sandbox.Exit{}, nil, false
	}
	if err != nil {
		c.kill(ctx, true)
		return sandbox.Exit{}, err, true
	}
	start := time.Now()
	code, stopped, err := c.wait(ctx, spec)
	if err != nil {
		c.kill(ctx, true)
		return sandbox.Exit{Stopped: stopped}, err, true
	}
	x := c.collect(ctx, spec, code)
	x.Container = &c.report
	x.Stopped = stopped
	x.Duration = time.Since(start)
	cerr := plan.copyBack(ctx, w.id) // copy mode: from the exited container, before its removal
	if eg != nil {
		// The container exited: nothing of the run is left to use its grant after the revoke.
		x.Egress = eg.end(ctx)
	}
	return x, cerr, true
}

// writeLaunch writes the launch file into a slot the engine sees (bind mode).
func writeLaunch(slot, script string) error {
	f, err := os.OpenFile(filepath.Join(slot, launchName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(script)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// launch puts the call's files and the launch file into the slot (put), attaches the
// container's streams and registers the wait for its exit, then sends the waiter its line,
// which starts the CLI, and copies the streams as a cold run's attach does. started is false
// when nothing can have run: the container could not be attached (it is not running) or put
// failed.
func (c *runContainer) launch(ctx context.Context, spec sandbox.Spec, put func() error) (started bool, _ error) {
	if err := put(); err != nil {
		return false, err
	}
	attached, err := c.e.cli.ContainerAttach(ctx, c.id, client.ContainerAttachOptions{
		Stream: true, Stdin: true, Stdout: true, Stderr: true,
	})
	if err != nil {
		return false, c.e.launchError("docker attach", c.id, err)
	}
	c.attached = attached
	waitCtx, cancelWait := context.WithCancel(context.WithoutCancel(ctx))
	c.w = newWaiter(c.e.cli.ContainerWait(waitCtx, c.id, client.ContainerWaitOptions{
		Condition: container.WaitConditionNextExit,
	}))
	c.cancelWait = cancelWait
	if _, err := attached.Conn.Write([]byte("\n")); err != nil {
		return true, c.e.launchError("docker attach", c.id, err)
	}
	if spec.Stdin == nil {
		_ = attached.CloseWrite() // the CLI's stdin is /dev/null (the launch file says so)
	}
	c.pipe(spec)
	return true, nil
}

// release closes the attached streams, waits for their copier and releases the wait; the
// container itself is removed in the background.
func (c *runContainer) release() {
	if c.streamsDone != nil {
		c.attached.Close()
		<-c.streamsDone
	} else if c.attached.Conn != nil {
		c.attached.Close()
	}
	if c.w != nil {
		c.cancelWait()
		c.w.drain()
	}
}

// envName is a variable name the shell can export.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// launchScript is the shell text that gives the CLI what a new container would: every Env
// entry exported (over the image's, which the waiter has), the working directory, then the exec
// of the entrypoint and command, with stdin /dev/null unless the Spec has one. Every value is
// single-quoted, so the shell expands nothing. ok is false for what it cannot say exactly (an
// entry without "=", a name the shell cannot export, a NUL byte): that call starts cold.
func launchScript(cfg *container.Config, stdin bool) (_ string, ok bool) {
	var b strings.Builder
	for _, kv := range cfg.Env {
		k, v, found := strings.Cut(kv, "=")
		if !found || !envName.MatchString(k) || strings.ContainsRune(v, 0) {
			return "", false
		}
		b.WriteString("export " + k + "=" + shQuote(v) + "\n")
	}
	if d := cfg.WorkingDir; d != "" {
		if strings.ContainsRune(d, 0) {
			return "", false
		}
		b.WriteString("cd " + shQuote(d) + " || exit 126\n")
	}
	b.WriteString("exec")
	for _, a := range append(append([]string{}, cfg.Entrypoint...), cfg.Cmd...) {
		if strings.ContainsRune(a, 0) {
			return "", false
		}
		b.WriteString(" " + shQuote(a))
	}
	if !stdin {
		b.WriteString(" </dev/null")
	}
	b.WriteString("\n")
	return b.String(), true
}

// shQuote single-quotes s for a POSIX shell; a quote inside is a double-quoted one ('"'"'),
// which every shell reads the same, in an export too.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// kill SIGKILLs the container and, when wait is set, waits until the engine saw it exit.
func (c *runContainer) kill(ctx context.Context, wait bool) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	res := c.e.cli.ContainerWait(kctx, c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	if _, err := c.e.cli.ContainerKill(kctx, c.id, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil && !isNotFound(err) {
		wait = wait && !errors.Is(err, context.DeadlineExceeded)
	}
	if !wait {
		go func() { // the client's goroutine must be received from
			select {
			case <-res.Result:
			case <-res.Error:
			}
		}()
		return
	}
	select {
	case <-res.Result:
	case <-res.Error:
	}
}

// learnSpec records spec's shape and the id of the image it ran for the warm pool (after a call,
// so that the refill does not compete with it).
func (e *Executor) learnSpec(spec sandbox.Spec, runID string, plan *runPlan, eg *runEgress, image string) {
	if e.warm == nil || spec.NotWarm {
		return
	}
	opts, err := e.createOptions(spec, runID, plan)
	if err != nil {
		return
	}
	e.applyEgress(&opts, eg)
	e.learn(opts, image, spec.Path, plan.copies != nil)
}
