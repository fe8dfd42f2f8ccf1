//go:build e2e

package docker

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// launchPayload is a value a shell would run commands from, were it not quoted.
const launchPayload = "a'b\"c $(touch /tmp/pwned-sub) `touch /tmp/pwned-tick` ;touch /tmp/pwned-semi\n" +
	"line2 \\ '$HOME' end"

// launchProbe prints the container's name, the variable exactly, which of the payload's files
// exist, then plants a marker the same way the payload would (the marker shows that a command
// of the payload would have run here), copies its stdin and prints its directory.
const launchProbe = `hostname
printf '[%s]\n' "$X"
for f in pwned-sub pwned-tick pwned-semi; do if [ -e /tmp/$f ]; then echo "found $f"; fi; done
touch /tmp/marker
if [ -e /tmp/marker ]; then echo "marker ok"; fi
cat
pwd`

// The claim hands the CLI its argv, environment and directory through a shell, and the CLI's
// stdin through the one the waiter read its line from: values full of shell syntax arrive byte
// for byte and run nothing, and the stdin arrives whole.
func TestWarmLaunchExact(t *testing.T) {
	base := t.TempDir()
	checkout := filepath.Join(t.TempDir(), "it's $(x) `y`")
	if err := os.Mkdir(checkout, 0o755); err != nil {
		t.Fatal(err)
	}
	e := newWarmExecutor(t, base)
	ids, dir := claimWarm(t, e, base, checkout)
	out, errOut := newWatchBuffer(), newWatchBuffer()
	spec := callSpec(t, dir, checkout, "/bin/sh", "-c", launchProbe)
	spec.Env = []string{"X=" + launchPayload, "CALL_DIR=" + dir}
	spec.Stdin, spec.Stdout, spec.Stderr = strings.NewReader("first line\nsecond line\n"), out, errOut
	var started *sandbox.ContainerReport
	spec.Started = func(r sandbox.ContainerReport) { started = &r }
	x, err := e.Run(t.Context(), spec)
	if err != nil || x.Code != 0 {
		t.Fatalf("Run: %+v %v; stderr %q", x, err, errOut.String())
	}
	if started == nil || x.Container == nil || !reflect.DeepEqual(*started, *x.Container) {
		t.Fatalf("Started told %+v, the exit's report is %+v", started, x.Container)
	}
	got := out.String()
	host := strings.SplitN(got, "\n", 2)[0]
	if len(ids) != 1 || !strings.HasPrefix(ids[0], host) {
		t.Fatalf("not a warm call (%v):\n%s", ids, got)
	}
	if !strings.Contains(got, "marker ok") {
		t.Fatalf("the marker was not planted, so the payload's commands could not have shown:\n%s", got)
	}
	want := host + "\n[" + launchPayload + "]\nmarker ok\nfirst line\nsecond line\n" + checkout + "\n"
	if got != want {
		t.Fatalf("output\n%q\nwant\n%q", got, want)
	}
}

// leftoverScript starts a process that outlives the CLI (another program, appending to a file
// in the call's dir without end), waits until it wrote (the marker: it ran), and exits.
const leftoverScript = `/bin/sh -c 'while true; do echo x >> "$CALL_DIR/after"; done' &
while [ ! -s "$CALL_DIR/after" ]; do :; done
echo left`

// What the CLI leaves running ends with it, before Run returns, as in a new container: the
// CLI is the claimed container's main program, so its exit is the container's, and the kernel
// ends every other process in it. The leftover's file no longer grows.
func TestWarmLeftoverEndsWithTheCLI(t *testing.T) {
	base, checkout := t.TempDir(), t.TempDir()
	e := newWarmExecutor(t, base)
	ids, dir := claimWarm(t, e, base, checkout)
	out, errOut := newWatchBuffer(), newWatchBuffer()
	spec := callSpec(t, dir, checkout, "/bin/sh", "-c", leftoverScript)
	spec.Env = []string{"CALL_DIR=" + dir}
	spec.Stdout, spec.Stderr = out, errOut
	x, err := e.Run(t.Context(), spec)
	if err != nil || x.Code != 0 || !strings.Contains(out.String(), "left") {
		t.Fatalf("Run: %+v %v; output %q, stderr %q", x, err, out.String(), errOut.String())
	}
	after := filepath.Join(dir, "after")
	fi, err := os.Stat(after)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("the leftover did not write (%v): it never ran", err)
	}
	if len(ids) != 1 {
		t.Fatalf("warm containers %v", ids)
	}
	insp, err := rawCli.ContainerInspect(t.Context(), ids[0], client.ContainerInspectOptions{})
	if err == nil && insp.Container.State != nil && insp.Container.State.Running {
		t.Fatalf("the claimed container still runs after the call: %+v", insp.Container.State)
	}
	e.background.Wait()
	if fi2, err := os.Stat(after); err != nil || fi2.Size() != fi.Size() {
		t.Fatalf("the leftover's file changed after the call: %d bytes, then %v (%v)", fi.Size(), fi2, err)
	}
}

// The executable the calls ran is looked up when a warm container is made; a call that names
// another one is still checked at its claim: a missing one is the launch error a cold call
// gets (Missing, with the hint), not a shell's "not found".
func TestWarmMissingExecutable(t *testing.T) {
	base, checkout := t.TempDir(), t.TempDir()
	e := newWarmExecutor(t, base)
	ids, dir := claimWarm(t, e, base, checkout)
	spec := callSpec(t, dir, checkout, "/usr/local/bin/no-such-cli")
	x, err := e.Run(t.Context(), spec)
	var le *sandbox.LaunchError
	if !errors.As(err, &le) || !le.Missing || le.Op != "docker stat" {
		t.Fatalf("Run of a missing executable: %+v, %v; want a Missing docker stat launch error", x, err)
	}
	e.background.Wait()
	if len(ids) != 1 || !gone(ids[0]) {
		t.Fatalf("the warm container %v was not claimed (it is removed only after a claim, or at the release)", ids)
	}
}
