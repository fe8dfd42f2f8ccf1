//go:build e2e && linux

package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/cline-mcp/cline-mcp/internal/testcluster"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// asbExecutor is clusterExecutor with agent-sandbox installed on the cluster and n warm pods per
// layout kept by it, closed (its pools, templates, pods and policies deleted) before
// clusterExecutor's cleanup looks for leftovers.
func asbExecutor(t testing.TB, n int) *Executor {
	t.Helper()
	e := clusterExecutor(t)
	useASB(t, e, n)
	return e
}

// useASB installs agent-sandbox on the cluster and has it keep e's n warm pods per layout, until
// the test's cleanup closes them (and finds none of its objects left).
func useASB(t testing.TB, e *Executor, n int) {
	t.Helper()
	testcluster.Start(t).AgentSandbox(t)
	dyn, err := dynamic.NewForConfig(e.rest)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Warm, e.cfg.WarmBackend, e.asb = n, WarmAgentSandbox, newASBPool(n, dyn)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("close the agent-sandbox pools: %v", err)
		}
		for _, r := range []schema.GroupVersionResource{asbClaims, asbSandboxes, asbPools, asbTemplates} {
			if left, _ := dyn.Resource(r).Namespace(e.cfg.Namespace).List(context.Background(), metav1.ListOptions{}); left != nil && len(left.Items) > 0 {
				t.Errorf("%d %s left behind", len(left.Items), r.Resource)
			}
		}
	})
}

// waitASBReady waits until every pool of e holds n ready sandboxes.
func waitASBReady(t testing.TB, e *Executor, n int) {
	t.Helper()
	e.asb.mu.Lock()
	var names []string
	for _, name := range e.asb.layouts {
		names = append(names, name)
	}
	e.asb.mu.Unlock()
	for _, name := range names {
		for i := 0; ; i++ {
			p, err := e.asb.dyn.Resource(asbPools).Namespace(e.cfg.Namespace).Get(context.Background(), name, metav1.GetOptions{})
			ready, _, _ := unstructured.NestedInt64(p.UnstructuredContent(), "status", "readyReplicas")
			if err == nil && ready >= int64(n) {
				break
			}
			if i > 1800 {
				t.Fatalf("pool %s never had %d ready sandboxes (%d; %v)", name, n, ready, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

var claimedPodName = regexp.MustCompile(`cline-mcp-[0-9a-f]{6}-[0-9a-f]{8}-[a-z0-9]+`)

// TestASBClaimRunsAndLeavesNothing: with agent-sandbox keeping the warm pods, a call's claim
// gets a started pod, the fake CLI runs in it and its changes to the checkout come back; a
// hostile run that plants files in the pod's /tmp and $HOME (its marker in the checkout shows it
// ran) leaves nothing for the next claim, which gets another pod; each pod serves one claim and
// is deleted with it.
func TestASBClaimRunsAndLeavesNothing(t *testing.T) {
	e := asbExecutor(t, 1)
	work := t.TempDir()
	for name, body := range map[string]string{"README.md": "hello\n", "src/a.go": "package a\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, name)), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Chmod(work, 0o777)
	_ = os.Chmod(filepath.Join(work, "src"), 0o777)
	spec, _, _ := shSpec(work, "true")
	runOK(t, e, spec) // cold: the first call of its layout makes the template and the pool
	waitASBReady(t, e, 1)
	spec, out, errb := fakeSpec(work, "Change things fake:attack_leftovers")
	x, err := e.Run(context.Background(), spec)
	if err != nil || x.Code != 0 || !strings.Contains(out.String(), `"type":"run_result"`) {
		t.Fatalf("claimed run: %+v %v\nstdout %s\nstderr %s", x, err, out, errb)
	}
	if got, _ := os.ReadFile(filepath.Join(work, "README.md")); string(got) != "hello\nchanged by the run\n" {
		t.Errorf("README.md came back as %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "new_file.txt")); string(b) != "created by the run\n" {
		t.Errorf("new_file.txt: %q", b)
	}
	waitASBReady(t, e, 1)
	spec, out, _ = shSpec(work, `echo planted > /tmp/planted; echo planted > "$HOME/planted"; echo ran > "$WORK/marker"`)
	x, first := runOK(t, e, spec)
	first = claimedPodName.FindString(x.Container.Network)
	if b, _ := os.ReadFile(filepath.Join(work, "marker")); string(b) != "ran\n" {
		t.Fatalf("the hostile run did not run (no marker came back: %q)", b)
	}
	waitASBReady(t, e, 1)
	spec, out, _ = shSpec(work, `ls /tmp "$HOME"; cat /tmp/planted "$HOME/planted"; true`)
	x, _ = runOK(t, e, spec)
	second := claimedPodName.FindString(x.Container.Network)
	if strings.Contains(out.String(), "planted") {
		t.Errorf("the next claim found what the hostile run planted: %q", out.String())
	}
	if first == "" || second == "" || first == second {
		t.Errorf("pods %q and %q: want two claimed pods", first, second)
	}
	if w, c := e.WarmStats(); w != 3 || c != 1 {
		t.Errorf("warm %d, cold %d: want 3 claimed calls after 1 cold", w, c)
	}
	podGone(t, e, first)
	podGone(t, e, second)
}

// TestASBReportAsCold: a claimed call's report (hardening, user, mounts, memory, image, the egress
// its policy allows) is the cold call's, the pod's name aside.
func TestASBReportAsCold(t *testing.T) {
	e := asbExecutor(t, 1)
	e.cfg.EgressDNS, e.cfg.EgressAllow = DNSKubeDNS, []string{"192.0.2.0/24:443"}
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	spec, _, _ := shSpec(work, "true")
	cold, _ := runOK(t, e, spec)
	waitASBReady(t, e, 1)
	spec, _, _ = shSpec(work, "true")
	warm, _ := runOK(t, e, spec)
	if w, _ := e.WarmStats(); w != 1 {
		t.Fatalf("the second call did not claim a warm pod (%d warm)", w)
	}
	a, b := *cold.Container, *warm.Container
	a.Network, b.Network = claimedPodName.ReplaceAllString(a.Network, "POD"), claimedPodName.ReplaceAllString(b.Network, "POD")
	a.Network = podName.ReplaceAllString(a.Network, "POD")
	if !reflect.DeepEqual(a, b) {
		t.Errorf("reports differ:\ncold %+v\nwarm %+v", a, b)
	}
	if len(b.Allowed) == 0 || b.Egress != sandbox.EgressPolicy {
		t.Errorf("the claimed call's policy allows %v (%s)", b.Allowed, b.Egress)
	}
}

// TestASBNotInstalled: on a cluster without agent-sandbox (its CRDs deleted), a call of the
// agent-sandbox backend fails with a LaunchError that says so and how to fix it, and leaves no
// pod and no policy (clusterExecutor's cleanup looks).
func TestASBNotInstalled(t *testing.T) {
	e := clusterExecutor(t)
	testcluster.Start(t).RemoveAgentSandbox(t)
	dyn, err := dynamic.NewForConfig(e.rest)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Warm, e.cfg.WarmBackend, e.asb = 1, WarmAgentSandbox, newASBPool(1, dyn)
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	spec, _, _ := shSpec(work, "echo ran > \"$WORK/marker\"")
	_, err = e.Run(context.Background(), spec)
	var le *sandbox.LaunchError
	if !errors.As(err, &le) || !strings.Contains(le.Error(), "agent-sandbox") || !strings.Contains(le.Hint, "install agent-sandbox") {
		t.Fatalf("want a LaunchError naming agent-sandbox with a hint, got %v", err)
	}
	t.Logf("the error: %v", err)
	if _, err := os.Stat(filepath.Join(work, "marker")); err == nil {
		t.Error("the call ran although it failed")
	}
}

// BenchmarkASBClaim is one call that claims a pod of agent-sandbox's warm pool and one that takes
// a pod of the executor's own pool per iteration, of the fake CLI with a small checkout copied in
// and back; the pools are refilled between iterations, outside the timings. The metrics are p50
// and p95 of the claim path (the claim's creation until its pod is checked) and of both calls'
// wall times.
//
//	go test -tags e2e -run '^$' -bench BenchmarkASBClaim -benchtime 20x ./sandbox/kubernetes/
func BenchmarkASBClaim(b *testing.B) {
	e, own := asbExecutor(b, 1), warmExecutor(b, 1)
	work := b.TempDir()
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	_ = os.Chmod(work, 0o777)
	call := func(e *Executor) time.Duration {
		spec, out, errb := fakeSpec(work, "Hi fake:pong")
		start := time.Now()
		x, err := e.Run(context.Background(), spec)
		if err != nil || x.Code != 0 {
			b.Fatalf("run: %+v %v\n%s\n%s", x, err, out, errb)
		}
		return time.Since(start)
	}
	call(e) // cold: makes the pools
	call(own)
	var claims, calls, owns []time.Duration
	for b.Loop() {
		b.StopTimer()
		waitASBReady(b, e, 1)
		waitIdle(b, own, 1)
		w0, _ := e.WarmStats()
		o0, _ := own.WarmStats()
		b.StartTimer()
		d, od := call(e), call(own)
		if w, _ := e.WarmStats(); w != w0+1 {
			b.Fatalf("call %d did not claim a warm pod", len(calls))
		}
		if o, _ := own.WarmStats(); o != o0+1 {
			b.Fatalf("call %d did not take one of the own warm pods", len(calls))
		}
		calls, claims, owns = append(calls, d), append(claims, time.Duration(e.asb.bound.Load())), append(owns, od)
	}
	b.Logf("agent-sandbox controller RSS after the calls: %d MiB", testcluster.Start(b).AgentSandboxRSS()>>20)
	for name, ds := range map[string][]time.Duration{"claim": claims, "asb-call": calls, "own-call": owns} {
		slices.Sort(ds)
		b.ReportMetric(ds[len(ds)/2].Seconds(), name+"-p50-s")
		b.ReportMetric(ds[min(len(ds)-1, len(ds)*95/100)].Seconds(), name+"-p95-s")
	}
}

// TestASBExhausted: more calls at once than warm sandboxes: every call ends (a claim that is not
// bound in time is deleted and its call starts cold; none waits for ever).
func TestASBExhausted(t *testing.T) {
	e := asbExecutor(t, 1)
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	spec, _, _ := shSpec(work, "true")
	runOK(t, e, spec)
	waitASBReady(t, e, 1)
	w, c := threeAtOnce(t, e, work)
	t.Logf("3 calls at once with one warm sandbox: %d claimed, %d cold", w, c)
	if w+c != 3 || w < 1 {
		t.Errorf("warm %d, cold %d of 3 calls at once with one warm sandbox", w, c)
	}
}

// TestASBPoolSwept: the pool of a server that died without closing it (SIGKILL) is swept by the
// next server (Sweep, by the dead instance): its claims, pool and template go, and with them
// its sandboxes, pods and the pool's policy; nothing makes them again.
func TestASBPoolSwept(t *testing.T) {
	dead := asbExecutor(t, 2)
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	spec, _, _ := shSpec(work, "true")
	runOK(t, dead, spec)
	waitASBReady(t, dead, 2)
	// The dead server's pool is gone with its process: nothing of it closes any more.
	dead.asb.mu.Lock()
	dead.asb.layouts = map[string]string{}
	dead.asb.mu.Unlock()
	next, err := New(Config{REST: dead.rest, Namespace: dead.cfg.Namespace, Image: dead.cfg.Image, Instance: "testhost-next"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := next.sweepASB(context.Background(), func(id string) bool { return id == dead.cfg.Instance })
	if err != nil || n != 1 {
		t.Errorf("swept %d pools, %v; want 1", n, err)
	}
	if _, err := next.Sweep(context.Background(), func(id string) bool { return id == dead.cfg.Instance }); err != nil {
		t.Error(err)
	}
	for i := 0; ; i++ {
		list, _ := next.cs.CoreV1().Pods(next.cfg.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: LabelWarm})
		pols, _ := next.cs.NetworkingV1().NetworkPolicies(next.cfg.Namespace).List(context.Background(), metav1.ListOptions{})
		if list != nil && len(list.Items) == 0 && pols != nil && len(pols.Items) == 0 {
			break
		}
		if i > 900 {
			t.Fatal("pods or policies of the dead server's pool are left after the sweep")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestASBKeyless: a claimed pod of a run with a credential: the key-less sidecar of the template
// gets the credential over its stdin after the claim, the run's policy opens egress for the
// provider only then, the provider receives the real key and the CLI's container never holds it
// (the same search as TestKeylessPod's finds nothing).
func TestASBKeyless(t *testing.T) {
	w := newKeylessWorld(t)
	useASB(t, w.e, 1)
	keylessWarmCall(t, w, func() { waitASBReady(t, w.e, 1) })
}

// TestASBMakesRoom: on a node that holds only one pod of this size, a call of another layout
// finds the node taken by agent-sandbox's idle pod; its pool is scaled to 0 (the idle pod goes)
// and the call runs instead of waiting for a place that never comes; the pool is scaled back
// after.
func TestASBMakesRoom(t *testing.T) {
	e := asbExecutor(t, 1)
	nodes, err := e.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("want the test cluster's one node: %v", err)
	}
	alloc := nodes.Items[0].Status.Allocatable.Cpu().MilliValue()
	// The main container's share makes a pod (main + keeper) take more than half the node.
	e.cfg.CPU = fmt.Sprintf("%dm", alloc*55/100)
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	spec, _, _ := shSpec(work, "true")
	runOK(t, e, spec)
	waitASBReady(t, e, 1)
	// The first call may have made room too: its cold pod and the new pool's first sandbox
	// both want more than half the node, and the scheduler may place the sandbox first.
	before := e.asb.roomMade.Load()
	other, _, _ := shSpec(work, "echo ran > \"$WORK/marker\"")
	other.Tmpfs = append(other.Tmpfs, sandbox.Tmpfs{Target: "/var/tmp", SizeMB: 8})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if x, err := e.Run(ctx, other); err != nil || x.Code != 0 {
		t.Fatalf("the call of the other layout: %+v %v", x, err)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "marker")); string(b) != "ran\n" {
		t.Fatalf("the call of the other layout did not run (marker %q)", b)
	}
	if n := e.asb.roomMade.Load() - before; n != 1 {
		t.Errorf("the pools made room for %d cold pods of the other layout, want 1 (the node was not full?)", n)
	}
	e.asb.mu.Lock()
	waiting := e.asb.waiting
	e.asb.mu.Unlock()
	if waiting != 0 {
		t.Errorf("%d cold pods still counted as waiting", waiting)
	}
	for _, name := range e.asb.layouts {
		p, err := e.asb.dyn.Resource(asbPools).Namespace(e.cfg.Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if n, _, _ := unstructured.NestedInt64(p.UnstructuredContent(), "spec", "replicas"); err != nil || n != 1 {
			t.Errorf("pool %s has %d replicas after the call (%v), want 1 again", name, n, err)
		}
	}
}
