//go:build e2e

package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// cachedSent is how many files the last fill of the kept volume of src sent.
func cachedSent(t *testing.T, e *Executor) (sent int, volume string) {
	t.Helper()
	e.cache.mu.Lock()
	defer e.cache.mu.Unlock()
	if len(e.cache.entries) != 1 {
		t.Fatalf("%d kept volumes, want 1", len(e.cache.entries))
	}
	for _, ent := range e.cache.entries {
		return ent.sent, ent.volume
	}
	return 0, ""
}

// fiftyFiles is a checkout of 50 files in five directories ("d<i%5>/f<i>.txt", "v0 <i>\n").
func fiftyFiles(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, "repo")
	for i := range 50 {
		writeTestFile(t, filepath.Join(repo, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%02d.txt", i)), fmt.Sprintf("v0 %d\n", i))
	}
	ageTree(t, repo)
	return repo
}

// ageTree dates every file of a tree an hour back: old enough not to count as possibly
// changing again within the file system's clock (such a file is sent again on the next fill).
func ageTree(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error { return os.Chtimes(p, old, old) }); err != nil {
		t.Fatal(err)
	}
}

// A read-only tree in copy mode is copied once; the next calls send only what changed on the
// host (a new volume when something was removed), every call sees the host's current tree, and
// a run cannot change the kept volume (it is mounted read-only: the attempt is shown to run).
func TestCopyCacheIncremental(t *testing.T) {
	e := newTestExecutor(t, WithMounts(MountsCopy), WithNetwork("none"), WithInstanceID("copy-cache-"+t.Name()))
	repo := fiftyFiles(t)

	call := func(steps ...string) string {
		t.Helper()
		spec, out, errOut := probeSpec(t, steps...)
		spec.Mounts = []sandbox.Mount{{Source: repo, Target: repo, ReadOnly: true}}
		x, err := e.Run(t.Context(), spec)
		if err != nil || x.Code != 0 {
			t.Fatalf("Run: %+v %v\n%s\n%s", x, err, out, errOut)
		}
		e.background.Wait() // the run's release: the next fill may go ahead
		return out.String()
	}
	f7, f8 := filepath.Join(repo, "d2", "f07.txt"), filepath.Join(repo, "d3", "f08.txt")

	out := call("read", f7)
	if sent, _ := cachedSent(t, e); sent != 50 || !strings.Contains(out, "read "+f7+" ok: v0 7") {
		t.Fatalf("first call sent %d files, want 50:\n%s", sent, out)
	}
	_, vol := cachedSent(t, e)

	// A hostile run tries to change the kept tree.
	out = call("write", f7, "tampered", "write", filepath.Join(repo, "planted"), "x")
	if !strings.Contains(out, "write "+f7+" error") || !strings.Contains(out, "planted error") {
		t.Fatalf("a run could write the kept read-only volume:\n%s", out)
	}
	if sent, v := cachedSent(t, e); sent != 0 || v != vol {
		t.Fatalf("an unchanged tree sent %d files (volume %s, was %s)", sent, v, vol)
	}

	writeTestFile(t, f8, "v1 8\n")
	writeTestFile(t, filepath.Join(repo, "new.txt"), "new\n")
	out = call("read", f7, "read", f8, "read", filepath.Join(repo, "new.txt"), "stat", filepath.Join(repo, "planted"))
	if sent, v := cachedSent(t, e); sent != 2 || v != vol {
		t.Fatalf("an edit and a new file sent %d files (volume %s, was %s), want 2 into the same volume", sent, v, vol)
	}
	for _, want := range []string{"ok: v0 7", "ok: v1 8", "ok: new", "planted missing"} {
		if !strings.Contains(out, want) {
			t.Fatalf("third call lacks %q:\n%s", want, out)
		}
	}

	if err := os.Remove(f7); err != nil {
		t.Fatal(err)
	}
	out = call("stat", f7, "read", f8)
	if sent, v := cachedSent(t, e); sent != 50 || v == vol {
		t.Fatalf("a removal sent %d files into volume %s (was %s), want all 50 into a new one", sent, v, vol)
	}
	if !strings.Contains(out, "stat "+f7+" missing") || !strings.Contains(out, "ok: v1 8") {
		t.Fatalf("after the removal:\n%s", out)
	}
	e.background.Wait()
	if _, err := rawCli.VolumeInspect(context.Background(), vol, client.VolumeInspectOptions{}); !isNotFound(err) {
		t.Fatalf("the replaced volume %s still exists: %v", vol, err)
	}

	noCopyLeftovers(t, e)
	_, vol = cachedSent(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rawCli.VolumeInspect(context.Background(), vol, client.VolumeInspectOptions{}); !isNotFound(err) {
		t.Fatalf("Close left the kept volume %s: %v", vol, err)
	}
}
