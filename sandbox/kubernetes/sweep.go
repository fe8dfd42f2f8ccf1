package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sweep deletes the pods (and their policies) that servers of this host left behind: those
// whose instance annotation gone reports dead (sandbox/proc's Gone for host-pid-start ids). The
// pods of live instances, this one included, stay. It returns how many it removed.
func (e *Executor) Sweep(ctx context.Context, gone func(instance string) bool) (int, error) {
	asbErr := e.sweepASBOf(ctx, func(id string) bool { return id != e.cfg.Instance && gone(id) })
	list, err := e.cs.CoreV1().Pods(e.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelRun})
	if err != nil {
		return 0, e.apiError("list pods", err)
	}
	removed := 0
	var errs []error
	for _, p := range list.Items {
		id := p.Annotations[AnnoInstance]
		if id == "" || id == e.cfg.Instance || p.Labels[LabelInstance] != instanceLabel(id) || !gone(id) {
			continue
		}
		zero := int64(0)
		err := e.cs.CoreV1().Pods(e.cfg.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		switch {
		case err == nil:
			removed++
			_ = e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("delete pod %s: %w", p.Name, err))
		}
	}
	return removed, errors.Join(append(errs, asbErr)...)
}

// RemoveOwn deletes every pod of this executor's instance (Config.Instance: a dead server's, for
// its watchdog) at once, waits until they are gone and then deletes their NetworkPolicies (named
// as the pods): a policy goes only after its pod, never while the pod could still run. It returns
// how many pods it removed.
func (e *Executor) RemoveOwn(ctx context.Context) (int, error) {
	asbErr := e.sweepASBOf(ctx, func(id string) bool { return id == e.cfg.Instance })
	pods := e.cs.CoreV1().Pods(e.cfg.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: LabelInstance + "=" + instanceLabel(e.cfg.Instance)})
	if err != nil {
		return 0, e.apiError("list pods", err)
	}
	zero := int64(0)
	var errs []error
	var names []string
	for _, p := range list.Items {
		if p.Annotations[AnnoInstance] != e.cfg.Instance {
			continue
		}
		err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete pod %s: %w", p.Name, err))
			continue
		}
		names = append(names, p.Name)
	}
	for _, name := range names {
		for {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				return len(names), errors.Join(append(errs, fmt.Errorf("pod %s still there: %w", name, ctx.Err()))...)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete networkpolicy %s: %w", name, err))
		}
	}
	return len(names), errors.Join(append(errs, asbErr)...)
}
