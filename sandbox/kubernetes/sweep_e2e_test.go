//go:build e2e && linux

package kubernetes

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// TestSweepOnCluster: running pods (and their policies) that servers left behind go when their
// server provably died on this host (a dead pid, a pid reused by another process); those of
// this server, of a live one, of another host and of an id nobody can parse stay.
func TestSweepOnCluster(t *testing.T) {
	e := clusterExecutor(t)
	ctx := t.Context()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	live := os.Getppid()
	liveStart, err := proc.StartTime(live)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Instance = proc.Self().String()
	tests := []struct {
		name, instance string
		wantGone       bool
	}{
		{"dead pid on this host", proc.Instance{Host: host, PID: 99999999, Start: 12345}.String(), true},
		{"reused pid", proc.Instance{Host: host, PID: live, Start: liveStart + 1}.String(), true},
		{"this instance", e.cfg.Instance, false},
		{"live other instance", proc.Instance{Host: host, PID: live, Start: liveStart}.String(), false},
		{"other host", proc.Instance{Host: "elsewhere", PID: 99999999, Start: 12345}.String(), false},
		{"unparsable", "garbage", false},
	}
	pods := e.cs.CoreV1().Pods(e.cfg.Namespace)
	t.Cleanup(func() {
		zero, sel := int64(0), metav1.ListOptions{LabelSelector: LabelRun}
		_ = pods.DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel)
		_ = e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).DeleteCollection(context.Background(), metav1.DeleteOptions{}, sel)
	})
	names := make([]string, len(tests))
	for i, tt := range tests {
		left := *e
		left.cfg.Instance = tt.instance
		spec, _, _ := fakeSpec("/tmp", "Wait fake:hang")
		spec.Mounts, spec.Tmpfs = nil, []sandbox.Tmpfs{{Target: "/home/cline", SizeMB: 16}}
		p, err := left.podFor(spec, nil, randomID(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if p, err = pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if _, err := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Create(ctx, denyAll(p, nil, ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names[i] = p.Name
	}
	// As a leftover of a crashed server would be: running.
	if _, err := e.waitFor(ctx, names[0], func(p *corev1.Pod) bool { return started(p, mainName) }); err != nil {
		t.Fatal(err)
	}
	n, err := e.Sweep(ctx, func(id string) bool { return proc.DeadOnHost(id, host) })
	if err != nil || n != 2 {
		t.Errorf("got %d swept, %v; want 2", n, err)
	}
	for i, tt := range tests {
		_, perr := pods.Get(ctx, names[i], metav1.GetOptions{})
		_, nerr := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Get(ctx, names[i], metav1.GetOptions{})
		if gone := apierrors.IsNotFound(perr); gone != tt.wantGone {
			t.Errorf("%s: pod gone %v (%v), want %v", tt.name, gone, perr, tt.wantGone)
		}
		if gone := apierrors.IsNotFound(nerr); gone != tt.wantGone {
			t.Errorf("%s: policy gone %v (%v), want %v", tt.name, gone, nerr, tt.wantGone)
		}
	}
}
