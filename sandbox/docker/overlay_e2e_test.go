//go:build e2e

package docker

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// A writable tree that comes back whole is an overlay of its kept volume: the run's edits, a
// directory it removed and made again (opaque), a renamed file and a new file come back exactly;
// a hostile run's writes (its copy back refused) never reach the next call, which finds the
// host's tree in the kept volume without a file being sent again.
func TestCopyOverlay(t *testing.T) {
	e := newTestExecutor(t, WithMounts(MountsCopy), WithNetwork("none"), WithInstanceID("copy-overlay-"+t.Name()))
	repo := fiftyFiles(t)
	writeTestFile(t, filepath.Join(repo, "move.txt"), "move\n")
	ageTree(t, repo)
	r := func(p string) string { return filepath.Join(repo, p) }
	call := func(wantErr bool, steps ...string) string {
		t.Helper()
		spec, out, errOut := probeSpec(t, steps...)
		spec.Mounts = []sandbox.Mount{{Source: repo, Target: repo, Return: sandbox.Return{Tree: true}}}
		x, err := e.Run(t.Context(), spec)
		if (err != nil) != wantErr || x.Code != 0 {
			t.Fatalf("Run: %+v %v (want an error: %v)\n%s\n%s", x, err, wantErr, out, errOut)
		}
		noCopyLeftovers(t, e)
		return out.String()
	}

	out := call(false, "write", r("d2/f07.txt"), "edited",
		"rm", r("d1"), "mkdir", r("d1"), "write", r("d1/new.txt"), "n",
		"rename", r("move.txt"), r("moved.txt"),
		"rename", r("d3"), r("d3b"),
		"write", r("planted.txt"), "p")
	if e.cache.overlay != 'y' {
		t.Fatalf("this engine should mount overlays: %s", e.cache.overlayWhy)
	}
	if sent, _ := cachedSent(t, e); sent != 51 {
		t.Errorf("the first call sent %d files into the kept volume, want 51", sent)
	}
	// Without redirects a directory of the lower layer cannot be renamed (EXDEV, as in any
	// container's image layer); mv copies it instead.
	if !strings.Contains(out, "rename "+r("d3b")+" error") || !strings.Contains(out, "cross-device") {
		t.Errorf("renaming a lower directory: want EXDEV\n%s", out)
	}
	d1, _ := os.ReadDir(r("d1"))
	if len(d1) != 1 || d1[0].Name() != "new.txt" {
		t.Errorf("d1 (removed and made again) holds %v, want only new.txt", d1)
	}
	for p, want := range map[string]string{"d2/f07.txt": "edited", "moved.txt": "move\n", "planted.txt": "p", "d3/f03.txt": "v0 3\n"} {
		if got := readTestFile(t, r(p)); got != want {
			t.Errorf("%s: got %q, want %q", p, got, want)
		}
	}
	if _, err := os.Lstat(r("move.txt")); !os.IsNotExist(err) {
		t.Errorf("move.txt is still there after its rename: %v", err)
	}

	// Removals on the host make the next fill start a new kept volume; this one is refused.
	// (Old stamps: a file written within two seconds of a fill would be sent again anyway.)
	ageTree(t, repo)
	out = call(true, "write", r("d2/f07.txt"), "tampered", "rm", r("d0"), "write", r("d4/x.txt"), "x", "mkfifo", r("pipe"))
	if !strings.Contains(out, "mkfifo "+r("pipe")+" ok") || !strings.Contains(out, "write "+r("d2/f07.txt")+" ok") {
		t.Fatalf("the hostile run did not run:\n%s", out)
	}
	_, vol := cachedSent(t, e)
	out = call(false, "read", r("d2/f07.txt"), "stat", r("d0/f00.txt"), "stat", r("d4/x.txt"), "stat", r("pipe"))
	sent, v := cachedSent(t, e)
	if sent != 0 || v != vol {
		t.Errorf("the unchanged host tree sent %d files (volume %s, was %s), want none into the same volume", sent, v, vol)
	}
	for _, want := range []string{"ok: edited", "stat " + r("d0/f00.txt") + " exists", "x.txt missing", "pipe missing"} {
		if !strings.Contains(out, want) {
			t.Errorf("the call after the hostile one lacks %q:\n%s", want, out)
		}
	}
	names, _ := os.ReadDir(repo)
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	if want := []string{"d0", "d1", "d2", "d3", "d4", "moved.txt", "planted.txt"}; !slices.Equal(got, want) {
		t.Errorf("the checkout holds %v, want %v", got, want)
	}
}
