//go:build e2e

package docker

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// copyScript runs in the fake image's shell like warmScript, and also reads the checkout's
// file, tries to change it (read-only: the attempt must show) and writes the call's answer file.
const copyScript = warmScript + `
cat f.txt
if echo evil > f.txt 2>/dev/null; then echo "checkout written"; else echo "checkout read-only"; fi
echo "out $CALL_VAR" > "$CALL_DIR/out.txt"`

// copyCall runs copyScript in copy mode with its own dir (its out.txt comes back) and the
// read-only checkout.
func copyCall(t *testing.T, e *Executor, dir, checkout, n string) (sandbox.Exit, string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "in.txt"), "input "+n+"\n")
	out, errOut := newWatchBuffer(), newWatchBuffer()
	spec := callSpec(t, dir, checkout, "/bin/sh", "-c", copyScript)
	spec.Mounts[0].Return = sandbox.Return{Files: []string{"out.txt"}}
	spec.Env = []string{"CALL_DIR=" + dir, "CALL_VAR=" + n}
	spec.Stdout, spec.Stderr = out, errOut
	x, err := e.Run(t.Context(), spec)
	if err != nil || x.Code != 0 {
		t.Fatalf("Run %s: %+v, %v; stderr %q", n, x, err, errOut.String())
	}
	if got, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(got) != "out "+n+"\n" {
		t.Fatalf("call %s: its answer file came back as %q, %v", n, got, err)
	}
	return x, out.String()
}

// instanceVolumes are the names of the volumes of e's instance.
func instanceVolumes(t *testing.T, e *Executor) []string {
	t.Helper()
	list, err := rawCli.VolumeList(context.Background(), client.VolumeListOptions{
		Filters: make(client.Filters).Add("label", LabelInstance+"="+e.Instance())})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range list.Items {
		names = append(names, v.Name)
	}
	return names
}

// In copy mode (an engine that cannot see this machine's files) a warm container takes a call
// too: it mounts the kept volume of the checkout and a slot volume of its own, the call's files
// go into that at the claim and its answer file comes back; the checkout it sees is the host's
// current one (a file changed between the calls), it cannot write it, nothing the earlier call
// planted is in it, its report is a cold copy-mode call's, and the used container and its slot
// volume are gone afterwards; Close leaves no volume.
func TestWarmCopyMode(t *testing.T) {
	base := t.TempDir()
	checkout := fiftyFiles(t)
	writeTestFile(t, filepath.Join(checkout, "f.txt"), "version 1\n")
	ageTree(t, checkout)
	e := newWarmExecutor(t, base, WithMounts(MountsCopy))
	cold := newTestExecutor(t, WithImage(fakeImage), WithEgress(Egress{Mode: EgressNone}), WithMounts(MountsCopy))

	ids := firstWarm(t, e, base, func(dir string) string { _, out := copyCall(t, e, dir, checkout, "0"); return out })
	slot, release := reserveWarm(t, e)
	xw, out1 := copyCall(t, e, filepath.Join(slot, "copy"), checkout, "1")
	host1 := ranIn(t, ids[0], out1)
	for _, want := range []string{"no planted", "planted ok", "input 1", "var=1", "version 1", "checkout read-only", checkout} {
		if !strings.Contains(out1, want) {
			t.Fatalf("warm call output lacks %q:\n%s", want, out1)
		}
	}
	xc, _ := copyCall(t, cold, filepath.Join(slot, "copy"), checkout, "c")
	rw, rc := reflect.ValueOf(*xw.Container), reflect.ValueOf(*xc.Container)
	for i := range rw.NumField() {
		if !reflect.DeepEqual(rw.Field(i).Interface(), rc.Field(i).Interface()) {
			t.Errorf("report field %s: warm %+v, cold %+v", rw.Type().Field(i).Name, rw.Field(i).Interface(), rc.Field(i).Interface())
		}
	}
	release()
	waitWarm(t, e, 1) // the replacement
	e.background.Wait()
	if !gone(ids[0]) {
		t.Fatalf("the used warm container %s still exists", ids[0])
	}
	for _, v := range instanceVolumes(t, e) {
		if strings.Contains(v, "-slot") && !strings.Contains(strings.Join(warmVolumes(t, e), " "), v) {
			t.Fatalf("volume %s of a used warm container is left", v)
		}
	}

	// The host changes the checkout: the next warm call sees the new file.
	writeTestFile(t, filepath.Join(checkout, "f.txt"), "version 2\n")
	time.Sleep(10 * time.Millisecond)
	slot2, release2 := reserveWarm(t, e)
	ids2 := warmIDs(t, e)
	_, out2 := copyCall(t, e, filepath.Join(slot2, "copy"), checkout, "2")
	if len(ids2) != 1 || ranIn(t, ids2[0], out2) == host1 {
		t.Fatalf("the second call ran in the first one's container %q (warm now: %v)", host1, ids2)
	}
	for _, want := range []string{"no planted", "input 2", "version 2", "checkout read-only"} {
		if !strings.Contains(out2, want) {
			t.Fatalf("second warm call output lacks %q:\n%s", want, out2)
		}
	}
	release2()

	// A file removed on the host makes the next fill start a new kept volume: the warm
	// container reserved for the call mounts the old one, so the call runs cold (and sees the
	// removal), and the old volume is removed once no warm container mounts it.
	waitWarm(t, e, 1)
	_, oldKept := cachedSent(t, e)
	if err := os.Remove(filepath.Join(checkout, "d0", "f00.txt")); err != nil {
		t.Fatal(err)
	}
	slot3, release3 := reserveWarm(t, e)
	ids3 := warmIDs(t, e)
	_, out3 := copyCall(t, e, filepath.Join(slot3, "copy"), checkout, "3")
	if host3 := strings.SplitN(out3, "\n", 2)[0]; len(ids3) != 1 || strings.HasPrefix(ids3[0], host3) {
		t.Fatalf("the call after the removal ran in %q, the warm container of the old volume %v", host3, ids3)
	}
	release3()
	waitWarm(t, e, 1)
	e.background.Wait()
	if _, newKept := cachedSent(t, e); newKept == oldKept || slices.Contains(instanceVolumes(t, e), oldKept) {
		t.Fatalf("the replaced kept volume %s is left (now %s; volumes %v)", oldKept, newKept, instanceVolumes(t, e))
	}
	for _, x := range []*Executor{e, cold} { // one instance id: the test's
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if left := instanceVolumes(t, e); len(left) != 0 {
		list, _ := rawCli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", LabelInstance+"="+e.Instance())})
		t.Fatalf("volumes left after Close: %v (containers %+v)", left, list.Items)
	}
}

// warmVolumes are the slot volumes of the instance's current warm containers.
func warmVolumes(t *testing.T, e *Executor) []string {
	t.Helper()
	var names []string
	for _, id := range warmIDs(t, e) {
		c, err := rawCli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
		if err != nil {
			continue
		}
		for _, m := range c.Container.Mounts {
			names = append(names, m.Name)
		}
	}
	return names
}
