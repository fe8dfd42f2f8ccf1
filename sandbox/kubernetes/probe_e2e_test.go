//go:build e2e && linux

package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProbePolicy: the probe says what the test cluster does with the runs' NetworkPolicy
// (the pod without a policy connects, so the probe really dialled), and leaves no pod or
// policy behind.
func TestProbePolicy(t *testing.T) {
	e := clusterExecutor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.ProbePolicy(ctx)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	t.Logf("probe: enforced %v, open %q, closed %q, took %v", res.Enforced, res.Open, res.Closed, res.Took.Round(time.Millisecond))
	if res.Open != "connected" {
		t.Errorf("the pod without a policy saw %q", res.Open)
	}
	if res.Enforced != strings.HasPrefix(res.Closed, "blocked") {
		t.Errorf("enforced %v but the closed pod saw %q", res.Enforced, res.Closed)
	}
	pods, _ := e.cs.CoreV1().Pods(e.cfg.Namespace).List(ctx, metav1.ListOptions{})
	pols, _ := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if pods == nil || pols == nil || len(pods.Items)+len(pols.Items) > 0 {
		t.Errorf("left behind: %v pods, %v policies", pods, pols)
	}
}
