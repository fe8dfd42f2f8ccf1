package kubernetes

import (
	"context"
	"errors"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// OnNoRoom has f called when a call's pod finds no room on the nodes (Insufficient cpu, memory,
// pods): the caller gives up the pods it keeps idle for later turns or calls (a conversation's
// kept pod, a spare), as the warm pools give up theirs. f must not block.
func (e *Executor) OnNoRoom(f func()) {
	if e.noRoom == nil {
		e.noRoom = &atomic.Pointer[func()]{}
	}
	e.noRoom.Store(&f)
}

// roomHook is OnNoRoom's f, nil without one.
func (e *Executor) roomHook() func() {
	if e.noRoom == nil {
		return nil
	}
	if f := e.noRoom.Load(); f != nil {
		return *f
	}
	return nil
}

// roomNeeded tells OnNoRoom's f that a call's pod waits for room.
func (e *Executor) roomNeeded() {
	if f := e.roomHook(); f != nil {
		f()
	}
}

// placed waits, when nothing but OnNoRoom's caller can make room (no warm pool), until the cold
// pod name is placed on a node, asking for room once while the cluster has none for it; without
// an OnNoRoom it returns at once (the run's own wait follows the pod).
func (e *Executor) placed(ctx context.Context, name string) error {
	if e.roomHook() == nil {
		return nil
	}
	return e.waitPlaced(ctx, name, e.roomNeeded)
}

// waitPlaced waits until the pod name is placed on a node, calling noRoom once (in the wait's
// goroutine) while the cluster has no room for it.
func (e *Executor) waitPlaced(ctx context.Context, name string, noRoom func()) error {
	asked := false
	_, err := e.waitFor(ctx, name, func(pod *corev1.Pod) bool {
		if pod.Spec.NodeName != "" {
			return true
		}
		if !asked && lacksRoom(pod) {
			asked = true
			noRoom()
		}
		return false
	})
	return err
}

// errNoRoom fails a standby run whose pod the cluster has no room for.
var errNoRoom = errors.New("the cluster has no room for a pod started ahead of its call; it is not started")

// placedStandby waits until a standby run's pod is placed on a node, and fails it when the
// cluster has no room for it: a pod started ahead of its call takes no room a call needs.
func (e *Executor) placedStandby(ctx context.Context, name string) error {
	pod, err := e.waitFor(ctx, name, func(pod *corev1.Pod) bool { return pod.Spec.NodeName != "" || lacksRoom(pod) })
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return errNoRoom
	}
	return nil
}
