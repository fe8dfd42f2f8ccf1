package kubernetes

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sweep deletes the pods (and their policies) that servers of this host left behind: those
// whose instance annotation gone reports dead (sandbox/proc's Gone for host-pid-start ids). The
// pods of live instances, this one included, stay. It returns how many it removed.
func (e *Executor) Sweep(ctx context.Context, gone func(instance string) bool) (int, error) {
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
	return removed, errors.Join(errs...)
}
