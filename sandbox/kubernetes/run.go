package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// helperStartFailed begins the main container's termination message when cline-mcp-k8s-helper
// could not start the program (its startFailed).
const helperStartFailed = "cline-mcp-k8s-helper run: cannot start:"

// helperNoForwarder begins it when the egress sidecar never listened (the helper's noForwarder).
const helperNoForwarder = "cline-mcp-k8s-helper run: no provider forwarder:"

// cleanupTimeout bounds the deletion of a run's pod, on a context that outlives the call.
const cleanupTimeout = 30 * time.Second

// Run runs spec in a pod of its own and removes the pod afterwards, on every path. A Spec with a
// Credential gets the egress sidecar, which receives the credential over its stdin and adds it to
// the run's provider requests; the run's NetworkPolicy admits the provider's addresses.
func (e *Executor) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Exit, error) {
	copies, err := e.planCopies(spec.Mounts)
	if err != nil {
		return sandbox.Exit{}, err
	}
	allow := e.cfg.EgressAllow
	var up upstream
	if spec.Credential != nil {
		if up, err = resolveUpstream(ctx, spec.Credential); err != nil {
			return sandbox.Exit{}, err
		}
		if !e.cfg.EgressOpen {
			allow = append(append([]string(nil), allow...), up.allow()...)
		} else {
			up.addrs = nil // no policy to agree with: the sidecar resolves the name itself
		}
	}
	// A conversation's pod (NotWarm: its data dir is its own) has a layout no later call has:
	// no pool is made for it, and none has a pod of it.
	if e.asb != nil && !spec.NotWarm {
		c, err := e.asb.claim(ctx, e, spec, copies)
		if err != nil {
			return sandbox.Exit{}, err
		}
		if c != nil {
			return e.runASB(ctx, spec, copies, allow, up, c)
		}
	}
	topUp := func() {}
	if e.warm != nil && !spec.NotWarm {
		var w *warmPod
		if w, topUp = e.warm.claim(ctx, e, spec, copies); w != nil {
			topUp()
			return e.runWarm(ctx, spec, copies, allow, up, w)
		}
	}
	deadline := e.cfg.Deadline
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d) + time.Minute
	}
	pod, err := e.podFor(spec, copies, randomID(), deadline)
	if err != nil {
		return sandbox.Exit{}, err
	}
	start := time.Now()
	if e.cfg.Track != nil {
		// Untracked after the deferred remove below: a dead server's watchdog removes the pod.
		defer e.cfg.Track(pod.Name)()
	}
	pods := e.cs.CoreV1().Pods(e.cfg.Namespace)
	if pod, err = pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return sandbox.Exit{}, e.apiError("create pods", err)
	}
	defer e.remove(ctx, pod.Name, time.Second)
	var pol *networkingv1.NetworkPolicy
	if !e.cfg.EgressOpen {
		if pol, err = e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Create(ctx, denyAll(pod, allow, e.cfg.EgressDNS), metav1.CreateOptions{}); err != nil {
			return sandbox.Exit{}, e.apiError("create networkpolicies", err)
		}
	}
	if spec.Standby {
		if err := e.placedStandby(ctx, pod.Name); err != nil {
			return sandbox.Exit{}, err
		}
	} else if e.asb != nil {
		if err := e.asb.coldPlaced(ctx, e, pod.Name); err != nil {
			return sandbox.Exit{}, err
		}
	}
	if e.warm != nil && !spec.Standby {
		if err := e.warm.coldPlaced(ctx, e, pod.Name); err != nil {
			return sandbox.Exit{}, err
		}
		topUp()
	}
	if e.asb == nil && e.warm == nil && !spec.Standby {
		if err := e.placed(ctx, pod.Name); err != nil {
			return sandbox.Exit{}, err
		}
	}
	return e.drive(ctx, pod, pol, spec, copies, up, start, e.fill, "")
}

// drive runs spec in pod, which exists with its policy pol (nil without one): hands the
// credential to the sidecar, fills the volumes (with fill), follows the run and copies back.
// end is a warm pod's nonce of its end frame ("" for a cold pod).
func (e *Executor) drive(ctx context.Context, pod *corev1.Pod, pol *networkingv1.NetworkPolicy, spec sandbox.Spec, copies []*copied, up upstream, start time.Time,
	fill func(context.Context, string, []*copied) error, end string) (sandbox.Exit, error) {
	outside := false
	var line *sidecarLine // a kept process's settles go over the grant's attach
	if spec.Credential != nil {
		l, err := e.grant(ctx, pod.Name, spec.Credential, up.addrs, spec.Live != nil)
		if err != nil {
			return sandbox.Exit{}, err
		}
		line, outside = l, true
		defer line.close()
	}
	if err := fill(ctx, pod.Name, copies); err != nil {
		return sandbox.Exit{}, err
	}
	var back sync.Mutex // a Sync and the copy back of the end write the same sources
	e.tellLive(ctx, pod, pol, spec, copies, line, outside, &back)
	x, ended, err := e.follow(ctx, pod.Name, spec, end)
	x.Duration, x.Container = time.Since(start), e.storedReport(ctx, pod, pol, spec, outside)
	if outside {
		x.Egress = e.sidecarSummary(ctx, pod.Name)
	}
	if err != nil || !ended {
		return x, err
	}
	// A stopped run's changes come back too, as from a stopped Docker container, on a context
	// of their own.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stoppedCopyBack)
	defer cancel()
	if !x.Stopped {
		cctx = ctx
	}
	back.Lock()
	defer back.Unlock()
	if err := e.copyBack(cctx, pod.Name, copies); err != nil {
		return x, &sandbox.CopyBackError{Source: err.source, Err: err.err}
	}
	return x, nil
}

// stoppedCopyBack bounds the copy back of a run whose call was cancelled.
const stoppedCopyBack = 2 * time.Minute

// follow streams the main container's output into spec's writers and waits for it to end
// (ended: its exit is known and the keeper holds what it left). When ctx ends first, the main
// container is stopped (stopMain: the CLI gets SIGINT) and the Exit says Stopped; a container
// that does not end within the stop grace, or that never started, goes with its pod.
//
// A warm pod's run (end, its nonce) ends with the helper's end frame in the log, once every
// process of the run is gone: its exit code is the call's, without waiting for the kubelet to
// report the container's end. A start failure (125 to 127) still waits for the status, whose
// termination message says why.
func (e *Executor) follow(ctx context.Context, pod string, spec sandbox.Spec, end string) (x sandbox.Exit, ended bool, err error) {
	if _, err := e.waitFor(ctx, pod, func(p *corev1.Pod) bool { return started(p, mainName) }); err != nil {
		if ctx.Err() != nil {
			e.remove(ctx, pod, spec.StopGrace)
			return sandbox.Exit{Code: -1, Stopped: true}, false, nil
		}
		return sandbox.Exit{}, false, err
	}
	logs, err := e.cs.CoreV1().Pods(e.cfg.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: mainName, Follow: true}).Stream(context.WithoutCancel(ctx))
	if err != nil {
		return sandbox.Exit{}, false, e.apiError("get pods/log", err)
	}
	done := make(chan streamEnd, 1)
	go func() {
		code, ended, err := demuxEnd(orDiscard(spec.Stdout), orDiscard(spec.Stderr), logs, end)
		done <- streamEnd{code, ended, err}
	}()
	fed := make(chan error, 1)
	if spec.Stdin != nil {
		fctx, stopFeed := context.WithCancel(context.WithoutCancel(ctx))
		defer stopFeed()
		go func() { fed <- e.feed(fctx, pod, spec.Stdin) }()
	}
	p, early, err := e.waitExit(ctx, pod, end, done)
	if early != nil {
		logs.Close()
		return sandbox.ExitFromStatus(early.code, false), true, nil
	}
	stopped := false
	if err != nil && ctx.Err() != nil {
		p, err = e.stopMain(ctx, pod, spec.StopGrace)
		if err != nil {
			logs.Close()
			<-done
			e.remove(ctx, pod, spec.StopGrace)
			return sandbox.Exit{Code: -1, Stopped: true}, false, nil
		}
		stopped = true
	}
	if err != nil {
		logs.Close()
		<-done
		return sandbox.Exit{}, false, err
	}
	settle := spec.SettleGrace
	if settle == 0 {
		settle = sandbox.DefaultSettleGrace
	}
	t := terminated(p, mainName)
	if t.ExitCode == 125 && strings.HasPrefix(t.Message, helperNoForwarder) {
		logs.Close()
		<-done
		return sandbox.Exit{}, false, &sandbox.LaunchError{Op: "pod start", Err: fmt.Errorf("image %s: %s", e.cfg.Image, t.Message),
			Hint: "the run image must hold cline-mcp-egress at " + e.cfg.Egress + " (make image adds it)"}
	}
	if t.ExitCode == 127 && strings.HasPrefix(t.Message, helperStartFailed) {
		logs.Close()
		<-done
		return sandbox.Exit{}, false, &sandbox.LaunchError{Op: "pod start", Missing: true, Err: fmt.Errorf("image %s: %s", e.cfg.Image, t.Message),
			Hint: "the image must hold the CLI at the path the server runs (--k8s-image)"}
	}
	x = exitOf(t)
	x.Stopped = stopped
	var derr error
	select {
	case d := <-done:
		derr = d.err
	case <-time.After(settle + 5*time.Second):
		x.StreamsCut = true
		logs.Close()
		<-done // nothing writes to the Spec's writers after Run returns
	}
	logs.Close()
	if w := spec.Stderr; w != nil {
		select {
		case err := <-fed:
			if err != nil {
				_, _ = fmt.Fprintf(w, "cline-mcp: the run's stdin (pods/attach) failed: %v\n", err)
			}
		default:
		}
		if derr != nil {
			_, _ = fmt.Fprintf(w, "cline-mcp: the rest of the run's output is lost: %v\n", derr)
		}
		if x.OOMKilled {
			_, _ = fmt.Fprintf(w, "cline-mcp: the pod exceeded its memory limit (%s) and was killed\n", or(e.cfg.Memory, "the namespace's default"))
		}
	}
	return x, true, nil
}

// streamEnd is how the log of the main container ended: at a warm pod's end frame (ended,
// with the run's exit code), else at its end or an error.
type streamEnd struct {
	code  int
	ended bool
	err   error
}

// waitExit waits until the main container ended, by its status (the pod it read), or for a warm
// pod (end) by the end frame of its log, whichever comes first (early, then). A log that ends
// otherwise is put back in done for follow.
func (e *Executor) waitExit(ctx context.Context, pod, end string, done chan streamEnd) (*corev1.Pod, *streamEnd, error) {
	isEnded := func(p *corev1.Pod) bool { return terminated(p, mainName) != nil }
	if end == "" {
		p, err := e.waitFor(ctx, pod, isEnded)
		return p, nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type status struct {
		p   *corev1.Pod
		err error
	}
	st := make(chan status, 1)
	go func() {
		p, err := e.waitFor(wctx, pod, isEnded)
		st <- status{p, err}
	}()
	select {
	case s := <-st:
		return s.p, nil, s.err
	case d := <-done:
		if d.ended && (d.code < 125 || d.code > 127) {
			return nil, &d, nil
		}
		done <- d
		s := <-st
		return s.p, nil, s.err
	}
}

// stopMain stops the main container of a cancelled run as `docker stop` would, keeping the pod
// (its keeper holds the volumes for the copy back): the helper exec'd into it sends SIGTERM to
// the container's pid 1, the wrapper, which passes SIGINT to the CLI. It waits the stop grace
// for the container to end; a CLI that outlasts it ends with its pod, and its changes with it.
func (e *Executor) stopMain(ctx context.Context, pod string, grace time.Duration) (*corev1.Pod, error) {
	if grace <= 0 {
		grace = sandbox.DefaultStopGrace
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+5*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	opts := &corev1.PodExecOptions{Container: mainName, Command: []string{e.cfg.Helper, "stop"}, Stderr: true}
	if err := e.stream(sctx, pod, "exec", opts, remotecommand.StreamOptions{Stderr: &stderr}); err != nil {
		// The container may have ended meanwhile: then there is nothing to stop.
		if p, gerr := e.cs.CoreV1().Pods(e.cfg.Namespace).Get(sctx, pod, metav1.GetOptions{}); gerr == nil && terminated(p, mainName) != nil {
			return p, nil
		}
		return nil, fmt.Errorf("stop %s: %w %s", pod, err, stderr.String())
	}
	return e.waitFor(sctx, pod, func(p *corev1.Pod) bool { return terminated(p, mainName) != nil })
}

// feed copies r to the main container's stdin (pods/attach) until r's EOF, which closes it
// (stdinOnce), or until ctx ends with the run. The CLI's output still comes from the log, so
// nothing it wrote before the attach is lost; the Agent Client Protocol speaks first on stdin.
func (e *Executor) feed(ctx context.Context, pod string, r io.Reader) error {
	opts := &corev1.PodAttachOptions{Container: mainName, Stdin: true}
	if err := e.stream(ctx, pod, "attach", opts, remotecommand.StreamOptions{Stdin: r}); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func exitOf(t *corev1.ContainerStateTerminated) sandbox.Exit {
	return sandbox.ExitFromStatus(int(t.ExitCode), t.Reason == "OOMKilled")
}

// apiError names what a refused request needed: a 403 is a LaunchError naming the verb and
// resource for the namespace's RBAC.
func (e *Executor) apiError(what string, err error) error {
	if apierrors.IsForbidden(err) {
		return &sandbox.LaunchError{Op: what, Err: err,
			Hint: fmt.Sprintf("the server's Kubernetes account may not %s in namespace %s: apply the RBAC manifest of docs/kubernetes.md (pods: create, get, list, watch, delete; pods/attach, pods/exec, pods/log: create/get; networkpolicies: create, delete)", what, e.cfg.Namespace)}
	}
	return fmt.Errorf("kubernetes %s: %w", what, err)
}
