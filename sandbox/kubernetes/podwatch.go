package kubernetes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Following a run pod's state through the API server, and removing it.

// waitFor watches the pod until ok says so; a container that cannot start (its image cannot be
// pulled, its command not run) is a LaunchError, a pod that ended otherwise an error. It watches
// rather than polls: a run lasts minutes, and polling each run's pod several times a second would
// load the API server and use up the client's rate limit (5 requests a second by default), which
// every request of every run shares.
func (e *Executor) waitFor(ctx context.Context, name string, ok func(*corev1.Pod) bool) (*corev1.Pod, error) {
	pods := e.cs.CoreV1().Pods(e.cfg.Namespace)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, e.apiError("get pods", err)
		}
		if done, err := e.judge(p, ok); done {
			return p, err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: p.ResourceVersion})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, e.apiError("watch pods", err)
		}
		p, done, err := e.watchUntil(ctx, w, name, ok)
		w.Stop()
		if done {
			return p, err
		}
		// The server ended the watch (they time out) or sent an error: look again, not in a spin.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// watchUntil reads w until judge decides; done is false when the watch ended first.
func (e *Executor) watchUntil(ctx context.Context, w watch.Interface, name string, ok func(*corev1.Pod) bool) (*corev1.Pod, bool, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, true, ctx.Err()
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error {
				return nil, false, nil
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || p.Name != name {
				continue
			}
			if ev.Type == watch.Deleted {
				return nil, true, fmt.Errorf("kubernetes executor: pod %s was deleted before the run ended", name)
			}
			if done, err := e.judge(p, ok); done {
				return p, true, err
			}
		}
	}
}

// judge says whether waiting for p is over: ok, or an error when it never will be.
func (e *Executor) judge(p *corev1.Pod, ok func(*corev1.Pod) bool) (bool, error) {
	if ok(p) {
		return true, nil
	}
	if err := cannotStart(p, e.cfg.Image); err != nil {
		return true, err
	}
	if p.Status.Phase == corev1.PodFailed && terminated(p, mainName) == nil {
		return true, fmt.Errorf("kubernetes executor: pod %s failed before the run ended: %s %s", p.Name, p.Status.Reason, p.Status.Message)
	}
	return false, nil
}

// cannotStart reports a container of p waiting for a reason that will not pass by itself.
func cannotStart(p *corev1.Pod, image string) error {
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName":
			return &sandbox.LaunchError{Op: "pod start", Missing: true, Err: fmt.Errorf("image %s: %s: %s", image, w.Reason, w.Message),
				Hint: "make the image available to the cluster's nodes (push it to a registry they pull from, or import it on the node) and pass it with --k8s-image"}
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
			return &sandbox.LaunchError{Op: "pod start", Err: fmt.Errorf("container %s: %s: %s", cs.Name, w.Reason, w.Message),
				Hint: "the image must hold cline-mcp-k8s-helper, the CLI and, for a key-less run's sidecar, cline-mcp-egress (images/k8s-fake, or the real image of make image)"}
		}
	}
	return nil
}

func started(p *corev1.Pod, name string) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name && (cs.State.Running != nil || cs.State.Terminated != nil) {
			return true
		}
	}
	return false
}

func terminated(p *corev1.Pod, name string) *corev1.ContainerStateTerminated {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// remove deletes the pod on a context that survives the call, waits until it is gone and only
// then deletes its NetworkPolicy; "not found" counts as done. The deletion is in the background
// (the default), not in the foreground: a foreground deletion has the garbage collector remove
// the policy first, which would open the network of a pod still running out its stop grace.
func (e *Executor) remove(ctx context.Context, name string, grace time.Duration) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+cleanupTimeout)
	defer cancel()
	secs := int64(grace.Round(time.Second).Seconds())
	err := e.cs.CoreV1().Pods(e.cfg.Namespace).Delete(rctx, name, metav1.DeleteOptions{GracePeriodSeconds: &secs})
	if err != nil && !apierrors.IsNotFound(err) {
		return
	}
	// Run returns when the pod is gone, not when its deletion began.
	if err == nil && e.waitGone(rctx, name) != nil {
		return // the pod may still run: its policy stays, and the garbage collector removes it later
	}
	// The garbage collector would remove the policy after its owner; not every cluster runs one.
	_ = e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Delete(rctx, name, metav1.DeleteOptions{})
}

// waitGone waits until the pod name is gone: a watch from the pod's current version, looked at
// again every second (a watch may miss what happened before it began), not a request every few
// milliseconds.
func (e *Executor) waitGone(ctx context.Context, name string) error {
	pods := e.cs.CoreV1().Pods(e.cfg.Namespace)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		w, err := pods.Watch(wctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: p.ResourceVersion})
		if err != nil {
			cancel()
			return err
		}
		gone := deletedWithin(wctx, w, name)
		w.Stop()
		cancel()
		if gone {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// deletedWithin reads w until it reports the pod name deleted (true), or ends, or ctx does.
func deletedWithin(ctx context.Context, w watch.Interface, name string) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, open := <-w.ResultChan():
			if !open || ev.Type == watch.Error {
				return false
			}
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Name == name && ev.Type == watch.Deleted {
				return true
			}
		}
	}
}
