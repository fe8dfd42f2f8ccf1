//go:build e2e

package docker

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// warmScript runs in the fake image's shell: it names its container (the hostname is the
// container id's start), says whether an earlier run's planted file is there, plants one in
// the container's /tmp (and proves it did), and reads the call's own file and variable.
const warmScript = `hostname
if [ -e /tmp/planted ]; then echo "found planted"; else echo "no planted"; fi
echo evil > /tmp/planted
if [ -e /tmp/planted ]; then echo "planted ok"; fi
cat "$CALL_DIR/in.txt"
echo "var=$CALL_VAR"
echo "proxy=${HTTPS_PROXY:+set}"
pwd`

// newWarmExecutor is a test executor on the fake image (it has /bin/sh and cat) with a pool of
// one warm container whose slots live in base.
func newWarmExecutor(t *testing.T, base string, opts ...Option) *Executor {
	t.Helper()
	needFakeImage(t)
	return newTestExecutor(t, append([]Option{WithImage(fakeImage), WithEgress(Egress{Mode: EgressNone}), WithWarm(1, base)}, opts...)...)
}

// warmCall runs warmScript with its private dir dir (a read-write mount at its own path, like
// the bridge's settings copy) and the read-only checkout.
func warmCall(t *testing.T, e *Executor, dir, checkout, n string) (sandbox.Exit, string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("input "+n+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut := newWatchBuffer(), newWatchBuffer()
	spec := callSpec(t, dir, checkout, "/bin/sh", "-c", warmScript)
	spec.Env = []string{"CALL_DIR=" + dir, "CALL_VAR=" + n}
	spec.Stdout, spec.Stderr = out, errOut
	x, err := e.Run(t.Context(), spec)
	if err != nil || x.Code != 0 {
		t.Fatalf("Run %s: %+v, %v; stderr %q", n, x, err, errOut.String())
	}
	return x, out.String()
}

// callSpec is a call of path args in the checkout, read-only, with its private dir dir (a
// read-write mount at its own path, like the bridge's settings copy) and a small /tmp.
func callSpec(t *testing.T, dir, checkout, path string, args ...string) sandbox.Spec {
	return sandbox.Spec{
		Path: path, Args: args, Dir: checkout,
		Mounts: []sandbox.Mount{{Source: dir, Target: dir}, {Source: checkout, Target: checkout, ReadOnly: true}},
		Tmpfs:  []sandbox.Tmpfs{{Target: "/tmp", SizeMB: 16}},
		Labels: map[string]string{testLabel: t.Name()},
	}
}

// claimWarm makes e's pool learn the calls' shape from one cold call, waits for its warm
// container and reserves that container's slot until the test ends: the pool's container ids
// then, and the call's private dir in the slot (made, empty).
func claimWarm(t *testing.T, e *Executor, base, checkout string) (ids []string, dir string) {
	t.Helper()
	warmCall(t, e, filepath.Join(base, "private-0", "copy"), checkout, "0")
	waitWarm(t, e, 1)
	ids = warmIDs(t, e)
	slot, release := e.WarmSlot()
	t.Cleanup(release)
	dir = filepath.Join(slot, "copy")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return ids, dir
}

// waitWarm waits until the pool holds n started containers (bounded, not timed: a pool that
// never fills fails the test).
func waitWarm(t *testing.T, e *Executor, n int) {
	t.Helper()
	for i := 0; i < 600 && e.WarmReady() < n; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if e.WarmReady() < n {
		t.Fatalf("the pool holds %d warm containers, want %d", e.WarmReady(), n)
	}
}

// warmIDs are the ids of the instance's warm containers.
func warmIDs(t *testing.T, e *Executor) []string {
	t.Helper()
	list, err := rawCli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelInstance+"="+e.Instance()).Add("label", labelRole+"=warm")})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

func gone(id string) bool {
	_, err := rawCli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	return isNotFound(err)
}

// firstWarm runs the first call of a pool (call, in a private dir under base): cold, it teaches
// the pool its shape; then it waits for the one warm container and returns the ids.
func firstWarm(t *testing.T, e *Executor, base string, call func(dir string) string) []string {
	t.Helper()
	out0 := call(filepath.Join(base, "private-0", "copy"))
	waitWarm(t, e, 1)
	ids := warmIDs(t, e)
	if len(ids) != 1 || strings.HasPrefix(ids[0], strings.SplitN(out0, "\n", 2)[0]) {
		t.Fatalf("warm containers %v after a cold call that ran in %q", ids, out0)
	}
	return ids
}

// reserveWarm reserves the ready warm container's slot.
func reserveWarm(t *testing.T, e *Executor) (slot string, release func()) {
	t.Helper()
	slot, release = e.WarmSlot()
	if slot == "" {
		t.Fatal("no warm slot although one container is ready")
	}
	return slot, release
}

// ranIn is the host name a call's output starts with; the test fails unless it is container id's.
func ranIn(t *testing.T, id, out string) string {
	t.Helper()
	host := strings.SplitN(out, "\n", 2)[0]
	if !strings.HasPrefix(id, host) {
		t.Fatalf("the call ran in %q, not in the warm container %s:\n%s", host, id, out)
	}
	return host
}

// A warm container serves exactly one call and is removed; the next call gets another one, in
// which nothing the first call planted exists.
func TestWarmContainerUsedOnceAndGone(t *testing.T) {
	base, checkout := t.TempDir(), t.TempDir()
	e := newWarmExecutor(t, base)
	ids := firstWarm(t, e, base, func(dir string) string { _, out := warmCall(t, e, dir, checkout, "0"); return out })
	slot, release := reserveWarm(t, e)
	_, out1 := warmCall(t, e, filepath.Join(slot, "copy"), checkout, "1")
	host1 := ranIn(t, ids[0], out1)
	for _, want := range []string{"no planted", "planted ok", "input 1", "var=1", checkout} {
		if !strings.Contains(out1, want) {
			t.Fatalf("warm call output lacks %q:\n%s", want, out1)
		}
	}
	release()
	waitWarm(t, e, 1) // the replacement
	e.background.Wait()
	if !gone(ids[0]) {
		t.Fatalf("the used warm container %s still exists", ids[0])
	}
	if _, err := os.Stat(slot); !os.IsNotExist(err) {
		t.Fatalf("the used slot %s still exists: %v", slot, err)
	}

	slot2, release2 := e.WarmSlot()
	defer release2()
	if slot2 == "" || slot2 == slot {
		t.Fatalf("second slot %q (first %q)", slot2, slot)
	}
	_, out2 := warmCall(t, e, filepath.Join(slot2, "copy"), checkout, "2")
	host2 := strings.SplitN(out2, "\n", 2)[0]
	if host2 == host1 || !strings.Contains(out2, "no planted") || !strings.Contains(out2, "input 2") {
		t.Fatalf("second warm call (container %q, first %q) saw the first call's leftovers or not its input:\n%s", host2, host1, out2)
	}
}

// The enforcement report of a warm call is the one a cold call of the same Spec gets.
func TestWarmReportEqualsCold(t *testing.T) {
	base, checkout := t.TempDir(), t.TempDir()
	e := newWarmExecutor(t, base)
	cold := newTestExecutor(t, WithImage(fakeImage), WithEgress(Egress{Mode: EgressNone}))
	ids, dir := claimWarm(t, e, base, checkout)
	xw, outW := warmCall(t, e, dir, checkout, "w")
	if len(ids) != 1 || !strings.HasPrefix(ids[0], strings.SplitN(outW, "\n", 2)[0]) {
		t.Fatalf("the call did not run warm (%v):\n%s", ids, outW)
	}
	xc, _ := warmCall(t, cold, dir, checkout, "c")
	if xw.Container == nil || xc.Container == nil {
		t.Fatalf("reports: warm %v, cold %v", xw.Container, xc.Container)
	}
	w, c := *xw.Container, *xc.Container
	rw, rc := reflect.ValueOf(w), reflect.ValueOf(c)
	for i := range rw.NumField() {
		if !reflect.DeepEqual(rw.Field(i).Interface(), rc.Field(i).Interface()) {
			t.Errorf("report field %s: warm %+v, cold %+v", rw.Type().Field(i).Name, rw.Field(i).Interface(), rc.Field(i).Interface())
		}
	}
	if !w.ReadOnlyRoot || w.Network != "none" || len(w.Mounts) != 3 {
		t.Fatalf("warm report %+v", w)
	}
}

// Without a warm container of the call's shape the call starts cold and works: an image whose
// warm containers cannot start (no /bin/sh), and a reserved slot whose container has another
// shape.
func TestWarmExhaustedRunsCold(t *testing.T) {
	base, checkout := t.TempDir(), t.TempDir()
	t.Run("no-shell", func(t *testing.T) {
		e := newTestExecutor(t, WithEgress(Egress{Mode: EgressNone}), WithWarm(1, base))
		spec, out, _ := probeSpec(t, "out", "cold")
		for i := range 2 {
			if x, err := e.Run(t.Context(), spec); err != nil || x.Code != 0 || !strings.Contains(out.String(), "cold") {
				t.Fatalf("run %d: %+v %v %q", i, x, err, out.String())
			}
			e.background.Wait()
		}
		if slot, release := e.WarmSlot(); slot != "" || len(warmIDs(t, e)) != 0 {
			release()
			t.Fatalf("a warm slot %q from an image without a shell", slot)
		}
	})
	t.Run("other-shape", func(t *testing.T) {
		e := newWarmExecutor(t, base)
		warmCall(t, e, filepath.Join(base, "private-0", "copy"), checkout, "0")
		waitWarm(t, e, 1)
		ids := warmIDs(t, e)
		slot, release := e.WarmSlot()
		defer release()
		// A checkout of its own: another shape.
		_, out := warmCall(t, e, filepath.Join(slot, "copy"), t.TempDir(), "1")
		if host := strings.SplitN(out, "\n", 2)[0]; len(ids) != 1 || strings.HasPrefix(ids[0], host) || !strings.Contains(out, "input 1") {
			t.Fatalf("a call of another shape ran in %q (warm %v):\n%s", host, ids, out)
		}
	})
}

// What the watchdog does for a server that died (RemoveOwn with its instance id) removes its
// warm containers and their slots, which held the calls' settings copies.
func TestWarmRemoveOwn(t *testing.T) {
	base, checkout := t.TempDir(), t.TempDir()
	e := newWarmExecutor(t, base)
	e.warm.refillDelay = 0 // a reserved container and a ready one
	warmCall(t, e, filepath.Join(base, "private-0", "copy"), checkout, "0")
	waitWarm(t, e, 1)
	slot, release := e.WarmSlot()
	defer release()
	if err := os.WriteFile(filepath.Join(slot, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, e, 1)
	if n := len(warmIDs(t, e)); n != 2 {
		t.Fatalf("%d warm containers before the removal, want 2 (one reserved)", n)
	}
	dog := newTestExecutor(t, WithInstanceID(e.Instance()), WithWarm(1, base))
	if _, err := dog.RemoveOwn(t.Context()); err != nil {
		t.Fatalf("RemoveOwn: %v", err)
	}
	if n := len(warmIDs(t, e)); n != 0 {
		t.Fatalf("%d warm containers left", n)
	}
	left, _ := filepath.Glob(filepath.Join(base, warmPrefix+"*"))
	if len(left) != 0 {
		t.Fatalf("slots left: %v", left)
	}
}

// A warm call whose context ends is stopped like a cold one: Run returns with Stopped set, and
// the container is gone.
func TestWarmCallStopped(t *testing.T) {
	base, checkout := t.TempDir(), t.TempDir()
	e := newWarmExecutor(t, base)
	ids, dir := claimWarm(t, e, base, checkout)
	stdin, feed := io.Pipe()
	defer feed.Close()
	out := newWatchBuffer()
	spec := callSpec(t, dir, checkout, "/bin/sh", "-c", "echo started; cat")
	spec.Stdin, spec.Stdout, spec.Stderr, spec.StopGrace = stdin, out, io.Discard, time.Second
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-out.seen("started"); cancel() }()
	x, err := e.Run(ctx, spec)
	if err != nil || !x.Stopped || !strings.Contains(out.String(), "started") {
		t.Fatalf("Run: %+v %v; output %q", x, err, out.String())
	}
	e.background.Wait()
	if len(ids) != 1 || !gone(ids[0]) {
		t.Fatalf("the stopped warm container %v still exists", ids)
	}
}

// Sweep removes the slots of dead instances on this host and keeps its own.
func TestWarmSweepSlots(t *testing.T) {
	base := t.TempDir()
	e := newWarmExecutor(t, base)
	host, _ := os.Hostname()
	dead := filepath.Join(base, warmPrefix+proc.Instance{Host: host, PID: 99999999, Start: 12345}.String()+"-123")
	own := filepath.Join(base, warmPrefix+e.Instance()+"-456")
	for _, d := range []string{dead, own} {
		writeTestFile(t, filepath.Join(d, "copy", "providers.json"), "{}")
	}
	if _, err := e.Sweep(t.Context()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("a dead instance's slot is left: %v", err)
	}
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("the live instance's slot is gone: %v", err)
	}
}

// With the egress proxy (the default egress), a warm container mounts the proxy's volume and the
// CLI starts through its forwarder with the call's own grant, and the report is a cold call's.
func TestWarmProviderEgress(t *testing.T) {
	base, checkout := t.TempDir(), t.TempDir()
	eg := WithEgress(Egress{Mode: EgressProvider, Image: mcpsession.EgressImage})
	e := newWarmExecutor(t, base, eg, WithNetwork("bridge"))
	cold := newTestExecutor(t, WithImage(fakeImage), eg, WithNetwork("bridge"))
	ids, dir := claimWarm(t, e, base, checkout)
	xw, out := warmCall(t, e, dir, checkout, "w")
	if len(ids) != 1 || !strings.HasPrefix(ids[0], strings.SplitN(out, "\n", 2)[0]) || !strings.Contains(out, "proxy=set") {
		t.Fatalf("not a warm call through the forwarder (%v):\n%s", ids, out)
	}
	xc, _ := warmCall(t, cold, dir, checkout, "c")
	if !reflect.DeepEqual(xw.Container, xc.Container) || xw.Container.Egress != EgressProvider {
		t.Fatalf("reports differ: warm %+v, cold %+v", xw.Container, xc.Container)
	}
}
