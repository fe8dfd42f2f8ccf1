//go:build e2e && linux

package testcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

const (
	serverPort = 8080
	probeEvery = 100 * time.Millisecond // a probe pod's dial period
	probeWait  = 200 * time.Millisecond // and its dial timeout (a connection on the bridge takes < 1 ms)
)

// TestNetworkPolicyEnforced: kube-router enforces NetworkPolicy on the pod network. A server pod
// listens on TCP; two probe pods dial it ten times a second, "client" and "bystander". Marker
// first: both connect without a policy (a test that passes because nothing connects proves
// nothing). Then, three times over: an Egress policy without rules that selects the client
// stops the client's connections and not the bystander's; the same policy with one egress rule,
// the server's podIP/32 and port, lets the client connect again. The time from each change to
// its effect is measured, and kube-router's memory. Last, a one-shot pod created under an
// existing deny policy (the order a run gets it) tells whether its first dial is already blocked.
func TestNetworkPolicyEnforced(t *testing.T) {
	c := Start(t)
	c.RequireNetworkPolicy(t)
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "netpol-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	const ref = "testcluster.local/nettool:1"
	c.ImportArchive(t, toolImage(t, ref))

	server := startPod(ctx, t, cs, ns.Name, "server", "server", ref, "listen", fmt.Sprintf(":%d", serverPort))
	addr := fmt.Sprintf("%s:%d", server.Status.PodIP, serverPort)
	probe := []string{"probe", addr, probeEvery.String(), probeWait.String()}
	client := startPod(ctx, t, cs, ns.Name, "client", "client", ref, probe...)
	bystander := startPod(ctx, t, cs, ns.Name, "bystander", "bystander", ref, probe...)

	// Marker: without a policy both probes connect.
	since := time.Now()
	for _, p := range []string{client.Name, bystander.Name} {
		if _, err := waitProbe(ctx, cs, ns.Name, p, since, true); err != nil {
			t.Fatalf("marker: without a NetworkPolicy %s never reached the server %s: %v", p, addr, err)
		}
	}

	pols := cs.NetworkingV1().NetworkPolicies(ns.Name)
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(serverPort)
	deny := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "client-egress"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		},
	}
	allowRule := []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: server.Status.PodIP + "/32"}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
	}}
	var denyLat, allowLat []time.Duration
	for i := range 3 {
		// deny: create the policy (first round) or drop its rule
		since = time.Now()
		if i == 0 {
			_, err = pols.Create(ctx, deny, metav1.CreateOptions{})
		} else {
			err = updatePolicy(ctx, cs, ns.Name, deny.Name, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		d, err := waitProbe(ctx, cs, ns.Name, client.Name, since, false)
		if err != nil {
			t.Fatalf("round %d: under an egress policy without rules the client still connects: %v\nkube-router:\n%s", i, err, c.LogTail("kube-router", 30))
		}
		denyLat = append(denyLat, d)
		if _, err := waitProbe(ctx, cs, ns.Name, bystander.Name, time.Now(), true); err != nil {
			t.Fatalf("round %d: the bystander (not selected by the policy) no longer connects: %v", i, err)
		}
		// allow: the server's podIP/32 and port
		since = time.Now()
		if err := updatePolicy(ctx, cs, ns.Name, deny.Name, allowRule); err != nil {
			t.Fatal(err)
		}
		if d, err = waitProbe(ctx, cs, ns.Name, client.Name, since, true); err != nil {
			t.Fatalf("round %d: an egress rule for %s/32 port %d did not let the client connect: %v\nkube-router:\n%s", i, server.Status.PodIP, serverPort, err, c.LogTail("kube-router", 30))
		}
		allowLat = append(allowLat, d)
	}
	slices.Sort(denyLat)
	slices.Sort(allowLat)
	t.Logf("policy change → in effect (probe period %v): deny median %v (min %v, max %v); allow median %v (min %v, max %v); n=3",
		probeEvery, denyLat[1], denyLat[0], denyLat[2], allowLat[1], allowLat[0], allowLat[2])

	// A pod created under an existing deny policy, dialing at once: the order a run's pod meets
	// its policy when the policy comes first. Logged, not asserted: kube-router programs a new
	// pod's chain only after it sees the pod's IP.
	if err := updatePolicy(ctx, cs, ns.Name, deny.Name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := waitProbe(ctx, cs, ns.Name, client.Name, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	blocked := 0
	for range 3 {
		_, log := runPodLabeled(ctx, t, cs, ns.Name, map[string]string{"role": "client"}, ref, "dial", addr, "1s")
		if strings.HasPrefix(log, "dial failed") {
			blocked++
		}
	}
	t.Logf("one-shot pods created under the deny policy: first dial blocked in %d of 3", blocked)
	// How long such a pod's egress stays open: a probe pod created under the policy.
	late := startPod(ctx, t, cs, ns.Name, "late", "client", ref, probe...)
	if _, err := waitProbe(ctx, cs, ns.Name, late.Name, time.Time{}, false); err != nil {
		t.Fatalf("a probe pod created under the deny policy is never blocked: %v", err)
	}
	open, first, last := exposure(podLog(ctx, t, cs, ns.Name, late.Name))
	t.Logf("a probe pod created under the deny policy: %d of its dials connected, the last %v after its first dial (%v)", open, last.Sub(first), first.Format("15:04:05.000"))
	t.Logf("kube-router RSS %d MiB; cluster up in %v", rssOf(c, "kube-router"), c.UpTime)
}

// toolImage builds the test tool from scripts/images/src (so its listen/dial/probe modes are
// there even when the cache's tool image predates them) and writes a FROM-scratch archive.
func toolImage(t *testing.T, ref string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	src := filepath.Join(filepath.Dir(scriptPath()), "images", "src")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./tool")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the tool: %v\n%s", err, out)
	}
	tar := filepath.Join(dir, "image.tar")
	mk := filepath.Join(filepath.Dir(scriptPath()), "images", "mkimage.sh")
	if out, err := exec.Command("bash", mk, bin, "tool", ref, tar).CombinedOutput(); err != nil {
		t.Fatalf("mkimage: %v\n%s", err, out)
	}
	return tar
}

// startPod starts a long-running pod labelled role=role and waits until it runs and has an IP.
func startPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, role, image string, args ...string) *corev1.Pod {
	t.Helper()
	grace := int64(0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"role": role}}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: new(bool), TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: corev1.PullNever, Args: args}},
	}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			return p
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded || ctx.Err() != nil {
			t.Fatalf("pod %s: %s %+v", name, p.Status.Phase, p.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runPodLabeled runs the tool with args in a pod with labels to its end and returns the time it took and its log.
func runPodLabeled(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, labels map[string]string, image string, args ...string) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "once-", Labels: labels}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: new(bool),
		Containers: []corev1.Container{{Name: "main", Image: image, ImagePullPolicy: corev1.PullNever, Args: args}},
	}}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("pod %s: %s %+v", pod.Name, p.Status.Phase, p.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d := time.Since(start)
	return d, strings.TrimSpace(podLog(ctx, t, cs, ns, pod.Name))
}

func podLog(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	rc, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitProbe waits until a probe pod's dials that started after since settle on ok (or on fail):
// five attempts in a row. It returns the time from since to the first of them.
func waitProbe(ctx context.Context, cs kubernetes.Interface, ns, pod string, since time.Time, ok bool) (time.Duration, error) {
	want := "fail"
	if ok {
		want = "ok"
	}
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		rc, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).Stream(ctx)
		if err != nil {
			return 0, err
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		run, first := 0, int64(0)
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			ms, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil || ms < since.UnixMilli() {
				continue
			}
			last = l
			if f[1] != want {
				run = 0
				continue
			}
			if run == 0 {
				first = ms
			}
			if run++; run == 5 {
				return time.UnixMilli(first).Sub(since), nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return 0, fmt.Errorf("no five %q dials in a row within 30 s (last: %q)", want, last)
}

// exposure reads a probe's log: how many dials connected and when, from its first dial to its last connected one.
func exposure(log string) (open int, first, last time.Time) {
	for _, l := range strings.Split(log, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		ms, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if first.IsZero() {
			first = time.UnixMilli(ms)
		}
		if f[1] == "ok" {
			open++
			last = time.UnixMilli(ms)
		}
	}
	if last.IsZero() {
		last = first
	}
	return open, first, last
}

// updatePolicy sets a policy's egress rules.
func updatePolicy(ctx context.Context, cs kubernetes.Interface, ns, name string, egress []networkingv1.NetworkPolicyEgressRule) error {
	p, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	p.Spec.Egress = egress
	_, err = cs.NetworkingV1().NetworkPolicies(ns).Update(ctx, p, metav1.UpdateOptions{})
	return err
}

// rssOf is a component's resident memory.
func rssOf(c *Cluster, component string) int {
	pid, _ := os.ReadFile(filepath.Join(c.Dir, "cluster", "run", component+".pid"))
	st, _ := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "status"))
	for _, l := range strings.Split(string(st), "\n") {
		var kb int
		if _, err := fmt.Sscanf(l, "VmRSS: %d kB", &kb); err == nil {
			return kb / 1024
		}
	}
	return 0
}
