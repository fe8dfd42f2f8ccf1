package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The agent-sandbox backend's upkeep: closing its pools, sweeping a dead server's, giving the
// nodes' room to a cold pod, and the permissions doctor checks.
// closeASB deletes the pools and templates (their sandboxes and pods go with them), waits for
// the claims in release and for the layouts' pods to be gone, then deletes the layouts' policies.
func (a *asbPool) close(ctx context.Context, e *Executor) error {
	a.mu.Lock()
	a.closed = true
	names := make([]string, 0, len(a.layouts))
	for _, n := range a.layouts {
		names = append(names, n)
	}
	a.mu.Unlock()
	var errs []error
	for _, n := range names {
		for _, r := range []schema.GroupVersionResource{asbPools, asbTemplates} {
			if err := a.dyn.Resource(r).Namespace(e.cfg.Namespace).Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	done := make(chan struct{})
	go func() { a.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	sel := LabelWarm + "=" + WarmAgentSandbox + "," + LabelInstance + "=" + instanceLabel(e.cfg.Instance)
	for {
		list, err := e.cs.CoreV1().Pods(e.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if len(list.Items) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, n := range names {
		if err := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sweepASB deletes the agent-sandbox objects (claims, then pools and templates: their sandboxes
// and pods go with them) of the instances dead reports, whatever this executor's backend: a dead
// server's pool would otherwise make new pods for ever, and its claims' sandboxes make their pods
// again after a sweep deletes them. The pools' deny-all policies go too (their idle pods never
// held a run). A cluster without agent-sandbox has none. It returns how many pools it removed.
func (e *Executor) sweepASB(ctx context.Context, dead func(instance string) bool) (int, error) {
	if e.cfg.REST == nil {
		return 0, nil // an executor of a fake clientset (unit tests)
	}
	client, err := dynamic.NewForConfig(e.cfg.REST)
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, r := range []schema.GroupVersionResource{asbClaims, asbPools, asbTemplates} {
		list, err := client.Resource(r).Namespace(e.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelInstance})
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
				return removed, nil // not installed, or not ours to see
			}
			return removed, err
		}
		for _, o := range list.Items {
			id := o.GetAnnotations()[AnnoInstance]
			if id == "" || o.GetLabels()[LabelInstance] != instanceLabel(id) || !dead(id) {
				continue
			}
			if err := client.Resource(r).Namespace(e.cfg.Namespace).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete %s %s: %w", r.Resource, o.GetName(), err))
				continue
			}
			if r == asbPools {
				removed++
				_ = e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			}
		}
	}
	return removed, errors.Join(errs...)
}

// sweepASBOf is sweepASB for Sweep and RemoveOwn, whose counts are of pods: its own count is
// dropped.
func (e *Executor) sweepASBOf(ctx context.Context, dead func(instance string) bool) error {
	_, err := e.sweepASB(ctx, dead)
	return err
}

// asbNeeds are what the agent-sandbox backend needs besides (doctor's check): its objects, the
// claimed sandbox, and the run's labels on the claimed pod.
var asbNeeds = [][3]string{
	{"create", "sandboxtemplates", ""}, {"delete", "sandboxtemplates", ""}, {"list", "sandboxtemplates", ""},
	{"create", "sandboxwarmpools", ""}, {"delete", "sandboxwarmpools", ""}, {"list", "sandboxwarmpools", ""},
	{"create", "sandboxclaims", ""}, {"delete", "sandboxclaims", ""}, {"list", "sandboxclaims", ""}, {"watch", "sandboxclaims", ""},
	{"get", "sandboxes", ""}, {"delete", "sandboxes", ""},
	{"patch", "pods", ""},
}

// apiGroup is the API group of a resource the executor uses.
func apiGroup(resource string) string {
	switch resource {
	case "networkpolicies":
		return "networking.k8s.io"
	case "sandboxtemplates", "sandboxwarmpools", "sandboxclaims":
		return asbClaims.Group
	case "sandboxes":
		return asbSandboxes.Group
	}
	return ""
}

// coldPlaced waits until the cold pod name is placed on a node; while the cluster has no room
// for it (Insufficient cpu, memory, pods), every pool of this executor is scaled to 0 (the
// controller deletes their unclaimed sandboxes) and scaled back once the cold pods that waited
// are placed, as the own pool's makeRoom gives up its idle pods.
func (a *asbPool) coldPlaced(ctx context.Context, e *Executor, name string) error {
	shrunk := false
	defer func() {
		if shrunk {
			a.scale(e, -1)
		}
	}()
	return e.waitPlaced(ctx, name, func() {
		shrunk = true
		a.roomMade.Add(1)
		a.scale(e, +1)
		e.roomNeeded()
	})
}

// scale counts a cold pod that waits for room (+1) or no longer does (-1); the pools are set
// to 0 replicas while any waits, and back to Config.Warm when none does.
func (a *asbPool) scale(e *Executor, d int) {
	a.mu.Lock()
	a.waiting += d
	replicas := int64(a.size)
	if a.waiting > 0 {
		replicas = 0
	}
	names := make([]string, 0, len(a.layouts))
	for _, n := range a.layouts {
		names = append(names, n)
	}
	closed := a.closed
	a.mu.Unlock()
	if closed {
		return
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	for _, n := range names {
		_, _ = a.dyn.Resource(asbPools).Namespace(e.cfg.Namespace).Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{})
	}
}
