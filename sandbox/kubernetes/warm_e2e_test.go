//go:build e2e && linux

package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// warmExecutor is clusterExecutor with n warm pods per layout, closed (its pods deleted) before
// clusterExecutor's cleanup looks for leftovers.
func warmExecutor(t testing.TB, n int) *Executor {
	t.Helper()
	e := clusterExecutor(t)
	e.cfg.Warm, e.warm = n, newWarmPool(n)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("close the warm pool: %v", err)
		}
	})
	return e
}

// waitIdle waits until the pool holds n started pods.
func waitIdle(t testing.TB, e *Executor, n int) {
	t.Helper()
	for i := 0; i < 1800; i++ {
		e.warm.mu.Lock()
		idle := 0
		for _, sh := range e.warm.shapes {
			idle += len(sh.idle)
		}
		e.warm.mu.Unlock()
		if idle >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the warm pool never held %d started pods", n)
}

// shSpec runs script under the image's /bin/sh in work, with the layout of fakeSpec.
func shSpec(work, script string) (sandbox.Spec, *bytes.Buffer, *bytes.Buffer) {
	spec, out, errb := fakeSpec(work, "")
	spec.Path, spec.Args = "/bin/sh", []string{"-c", script}
	spec.Env = append(spec.Env, "WORK="+work)
	return spec, out, errb
}

var podName = regexp.MustCompile(`cline-mcp-[0-9a-f]{12}`)

// runOK runs spec and fails the test unless it ran to exit 0; it returns the exit and the name
// of the pod it ran in (named in the report's network line, as its policy).
func runOK(t testing.TB, e *Executor, spec sandbox.Spec) (sandbox.Exit, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	x, err := e.Run(ctx, spec)
	if err != nil || x.Code != 0 {
		t.Fatalf("run: %+v %v\nstdout %s\nstderr %s", x, err, spec.Stdout, spec.Stderr)
	}
	if x.Container == nil {
		t.Fatal("no report")
	}
	return x, podName.FindString(x.Container.Network)
}

func podGone(t testing.TB, e *Executor, name string) {
	t.Helper()
	for i := 0; i < 600; i++ {
		_, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("pod %s of a finished warm call is still there", name)
}

// TestWarmPodOnceAndGone: a call takes a warm pod, the run's command, environment, directory and
// files arrive in it, its changes come back; a hostile run that plants files in the pod's /tmp
// and $HOME (its marker in the checkout shows it ran) leaves nothing for the next call, which
// gets another pod; each pod serves one call and is deleted.
func TestWarmPodOnceAndGone(t *testing.T) {
	e := warmExecutor(t, 1)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "in.txt"), []byte("sent in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(work, 0o777)
	spec, _, _ := shSpec(work, "true")
	runOK(t, e, spec) // cold: the first call of its layout makes the pool
	waitIdle(t, e, 1)
	spec, out, _ := shSpec(work, `cat "$WORK/in.txt"; pwd; echo planted > /tmp/planted; echo planted > "$HOME/planted"; echo ran > "$WORK/marker"`)
	_, first := runOK(t, e, spec)
	if got := out.String(); !strings.Contains(got, "sent in\n"+work+"\n") {
		t.Errorf("the warm run's stdout %q lacks its file and directory", got)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "marker")); string(b) != "ran\n" {
		t.Fatalf("the hostile run did not run (no marker came back: %q)", b)
	}
	waitIdle(t, e, 1)
	spec, out, _ = shSpec(work, `ls /tmp "$HOME"; cat /tmp/planted "$HOME/planted"; true`)
	_, second := runOK(t, e, spec)
	if strings.Contains(out.String(), "planted") {
		t.Errorf("the next call found what the hostile one planted: %q", out.String())
	}
	if first == "" || second == "" || first == second {
		t.Errorf("pods %q and %q: want two warm pods", first, second)
	}
	if w, c := e.WarmStats(); w != 2 || c != 1 {
		t.Errorf("warm %d, cold %d: want 2 warm calls after 1 cold", w, c)
	}
	podGone(t, e, first)
	podGone(t, e, second)
}

// TestWarmExhausted: more calls at once than warm pods: each call ends (the ones without a warm
// pod start cold, none waits for one being made).
func TestWarmExhausted(t *testing.T) {
	e := warmExecutor(t, 1)
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	spec, _, _ := shSpec(work, "true")
	runOK(t, e, spec)
	waitIdle(t, e, 1)
	w, c := threeAtOnce(t, e, work)
	if w+c != 3 || c < 1 || w < 1 {
		t.Errorf("warm %d, cold %d of 3 calls at once with one warm pod", w, c)
	}
}

// threeAtOnce runs three quick calls at once on e, whose pool has one warm pod or sandbox ready,
// and waits for all three: none may wait for ever. It returns how many of them ran warm and cold.
func threeAtOnce(t *testing.T, e *Executor, work string) (warm, cold int64) {
	t.Helper()
	w0, c0 := e.WarmStats()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec, _, _ := shSpec(work, "true")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if x, err := e.Run(ctx, spec); err != nil || x.Code != 0 {
				t.Errorf("run: %+v %v", x, err)
			}
		}()
	}
	wg.Wait()
	w, c := e.WarmStats()
	return w - w0, c - c0
}

// TestWarmReportAsCold: a warm call's report (hardening, user, mounts, memory, image, the egress
// its policy allows) is the cold call's, the pod's name aside.
func TestWarmReportAsCold(t *testing.T) {
	e := warmExecutor(t, 1)
	e.cfg.EgressDNS, e.cfg.EgressAllow = DNSKubeDNS, []string{"192.0.2.0/24:443"}
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	spec, _, _ := shSpec(work, "true")
	cold, _ := runOK(t, e, spec)
	waitIdle(t, e, 1)
	spec, _, _ = shSpec(work, "true")
	warm, _ := runOK(t, e, spec)
	if w, _ := e.WarmStats(); w != 1 {
		t.Fatalf("the second call was not warm (%d warm)", w)
	}
	a, b := *cold.Container, *warm.Container
	a.Network, b.Network = podName.ReplaceAllString(a.Network, "POD"), podName.ReplaceAllString(b.Network, "POD")
	if !reflect.DeepEqual(a, b) {
		t.Errorf("reports differ:\ncold %+v\nwarm %+v", a, b)
	}
	if len(b.Allowed) == 0 || b.Egress != sandbox.EgressPolicy {
		t.Errorf("the warm call's policy allows %v (%s)", b.Allowed, b.Egress)
	}
}

// TestWarmPoolSwept: the warm pods of a server that died without closing its pool (SIGKILL) are
// swept by the next server (Sweep, by the dead instance), their policies with them.
func TestWarmPoolSwept(t *testing.T) {
	dead := warmExecutor(t, 2)
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	spec, _, _ := shSpec(work, "true")
	runOK(t, dead, spec)
	waitIdle(t, dead, 2)
	// The dead server's pool is gone with its process: nothing of it runs or deletes any more.
	dead.warm.mu.Lock()
	dead.warm.shapes = map[string]*warmShape{}
	dead.warm.mu.Unlock()
	next, err := New(Config{REST: dead.rest, Namespace: dead.cfg.Namespace, Image: dead.cfg.Image, Instance: "testhost-next"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := next.Sweep(context.Background(), func(id string) bool { return id == dead.cfg.Instance })
	if err != nil || n != 2 {
		t.Errorf("swept %d warm pods, %v; want 2", n, err)
	}
	for i := 0; i < 600; i++ {
		list, _ := next.cs.CoreV1().Pods(next.cfg.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: LabelWarm})
		if list != nil && len(list.Items) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Error("warm pods left after the sweep")
}

// TestWarmKeyless: a warm pod of a run with a credential: the key-less sidecar gets the
// credential over its stdin after the claim, the policy's egress (none while the pod waited) is
// opened for the provider at the claim, the provider receives the real key and the CLI's
// container never holds it (the same search as TestKeylessPod's finds nothing).
func TestWarmKeyless(t *testing.T) {
	w := newKeylessWorld(t)
	w.e.cfg.Warm, w.e.warm = 1, newWarmPool(1)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = w.e.Close(ctx)
	})
	keylessWarmCall(t, w, func() { waitIdle(t, w.e, 1) })
}

// keylessWarmCall runs a key-less call cold, waits (ready) until a warm pod is ready, and runs it
// again in that pod: the sidecar gets the credential after the claim, the provider receives the
// real key from both calls, the run's container never holds it, and the report says so.
func keylessWarmCall(t *testing.T, w keylessWorld, ready func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	prompt := "Call fake:call_provider?needle=" + w.masked()
	spec, _ := w.spec(t, "http://"+sandbox.ProviderProxyAddr+"/v1", "sk-cline-mcp-placeholder-0123", prompt, w.credential())
	if x, err := w.e.Run(ctx, spec); err != nil || x.Code != 0 {
		t.Fatalf("cold run: %+v %v", x, err)
	}
	ready()
	var out bytes.Buffer
	spec.Stdout = &out
	x, err := w.e.Run(ctx, spec)
	if err != nil || x.Code != 0 {
		t.Fatalf("warm run: %+v %v\n%s", x, err, out.String())
	}
	if n, _ := w.e.WarmStats(); n != 1 {
		t.Fatalf("the second call was not warm (%d warm)", n)
	}
	rep := callReport(t, out.String())
	if rep["status"] != float64(200) || rep["head"] != "fake provider ok /v1/echo" {
		t.Errorf("the provider was not reached through the warm pod's sidecar: %v", rep)
	}
	if found, _ := rep["needle_found"].([]any); len(found) != 0 {
		t.Errorf("the key was inside the warm run's container at %v", found)
	}
	if log := w.providerLog(t); strings.Count(log, "Bearer "+w.key) < 2 {
		t.Errorf("the provider did not get the real key from both calls; it logged:\n%s", log)
	}
	if c := x.Container; c == nil || !c.CredentialOutside || !slices.Contains(c.Allowed, w.ip+"/32:18080/TCP") {
		t.Errorf("warm report %+v", c)
	}
}

// TestWarmPoolMakesRoom: on a node that holds only one pod of this size, a call of another layout
// finds the node taken by the pool's idle pod; the pool gives its room up (the idle pod is
// deleted) and the call runs instead of waiting for a place that never comes.
func TestWarmPoolMakesRoom(t *testing.T) {
	e := warmExecutor(t, 1)
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
	waitIdle(t, e, 1)
	other, _, _ := shSpec(work, "echo ran > \"$WORK/marker\"")
	other.Tmpfs = append(other.Tmpfs, sandbox.Tmpfs{Target: "/var/tmp", SizeMB: 8})
	runOK(t, e, other)
	if b, _ := os.ReadFile(filepath.Join(work, "marker")); string(b) != "ran\n" {
		t.Fatalf("the call of the other layout did not run (marker %q)", b)
	}
	if w, c := e.WarmStats(); w != 0 || c != 2 {
		t.Errorf("warm %d, cold %d: want two cold calls", w, c)
	}
}
