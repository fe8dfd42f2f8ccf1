//go:build e2e && linux

package kubernetes

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cline-mcp/cline-mcp/internal/testcluster"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestProbePolicy: the probe says what the test cluster does with the runs' NetworkPolicy (it
// knows: kube-router enforces it when built), the pod without a policy connects (so the probe
// really dialled), and no pod or policy is left behind.
func TestProbePolicy(t *testing.T) {
	e := clusterExecutor(t)
	c := testcluster.Start(t)
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
	if res.Enforced != c.EnforcesNetworkPolicy || res.Enforced != strings.HasPrefix(res.Closed, "blocked") {
		t.Errorf("probe says enforced %v (closed pod: %q); the cluster enforces: %v", res.Enforced, res.Closed, c.EnforcesNetworkPolicy)
	}
	pods, _ := e.cs.CoreV1().Pods(e.cfg.Namespace).List(ctx, metav1.ListOptions{})
	pols, _ := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).List(ctx, metav1.ListOptions{})
	if pods == nil || pols == nil || len(pods.Items)+len(pols.Items) > 0 {
		t.Errorf("left behind: %v pods, %v policies", pods, pols)
	}
}

// TestRunEgressPolicy: on a cluster that enforces NetworkPolicy, a run reaches exactly what
// --k8s-egress-allow names: a pod it may reach connects, the same pod on another allowed port
// or under the bare deny-all policy does not. The run without a policy (--k8s-egress open)
// connects first, so the target is reachable and a block is the policy's doing.
func TestRunEgressPolicy(t *testing.T) {
	e := clusterExecutor(t)
	testcluster.Start(t).RequireNetworkPolicy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	target, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Create(ctx, e.probePod(randomID(), "target", []string{e.cfg.Helper, "serve", ":" + probePort, "240"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.remove(ctx, target.Name, 0)
	target, err = e.waitFor(ctx, target.Name, func(p *corev1.Pod) bool { return started(p, probeContainer) && p.Status.PodIP != "" })
	if err != nil {
		t.Fatal(err)
	}
	ip := target.Status.PodIP
	addr := net.JoinHostPort(ip, probePort)
	for _, tc := range []struct {
		name  string
		open  bool
		allow []string
		want  int
	}{
		{"open", true, nil, 0},
		{"allowed", false, []string{ip + "/32:" + probePort}, 0},
		{"other port allowed", false, []string{ip + "/32:9999"}, 3},
		{"deny-all", false, nil, 3},
	} {
		ex := *e
		ex.cfg.EgressOpen, ex.cfg.EgressAllow = tc.open, tc.allow
		var out, errb bytes.Buffer
		x, err := ex.Run(ctx, sandbox.Spec{Path: e.cfg.Helper, Args: []string{"dial", addr}, Stdout: &out, Stderr: &errb})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if x.Code != tc.want {
			t.Errorf("%s: the run's dial to %s ended %d (%s), want %d", tc.name, addr, x.Code, strings.TrimSpace(out.String()), tc.want)
		}
	}
}

// TestRunEgressDNS: on a cluster that enforces NetworkPolicy, --k8s-egress-dns kube-dns lets a run
// reach the cluster's DNS pods on port 53 (a stand-in: a pod labelled k8s-app=kube-dns in
// kube-system, listening on TCP 53), and none does not; a run without a policy connects first.
func TestRunEgressDNS(t *testing.T) {
	e := clusterExecutor(t)
	testcluster.Start(t).RequireNetworkPolicy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sys := *e
	sys.cfg.Namespace = "kube-system"
	pod := sys.probePod(randomID(), "dns", []string{e.cfg.Helper, "serve", ":53", "240"})
	pod.Labels["k8s-app"] = "kube-dns"
	// Port 53 as a non-root user without capabilities: the namespaced, safe sysctl.
	pod.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}}
	dns, err := sys.cs.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.remove(ctx, dns.Name, 0)
	dns, err = sys.waitFor(ctx, dns.Name, func(p *corev1.Pod) bool { return started(p, probeContainer) && p.Status.PodIP != "" })
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(dns.Status.PodIP, "53")
	for _, tc := range []struct {
		name, dns string
		open      bool
		want      int
	}{
		{"open", "", true, 0},
		{"kube-dns", DNSKubeDNS, false, 0},
		{"the resolver's address", dns.Status.PodIP, false, 0},
		{"none", "", false, 3},
	} {
		ex := *e
		ex.cfg.EgressOpen, ex.cfg.EgressDNS = tc.open, tc.dns
		var out bytes.Buffer
		x, err := ex.Run(ctx, sandbox.Spec{Path: e.cfg.Helper, Args: []string{"dial", addr}, Stdout: &out})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if x.Code != tc.want {
			t.Errorf("%s: the run's dial to the DNS pod %s ended %d (%s), want %d", tc.name, addr, x.Code, strings.TrimSpace(out.String()), tc.want)
		}
	}
}
