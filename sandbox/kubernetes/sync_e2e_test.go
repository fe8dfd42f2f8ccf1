//go:build e2e && linux

package kubernetes

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// syncScript writes a.txt (the marker that the run ran) and waits for a line; then removes
// a.txt, writes b.txt and waits again: two turns of a kept process.
const syncScript = `echo one > a.txt; echo ready1; read x; rm a.txt; echo two > b.txt; echo ready2; read x; exit 0`

// syncRun starts syncScript in a pod with work as its writable tree and returns its Syncer, its
// stdout, the writer of its stdin and the channel of its end.
func syncRun(t *testing.T, e *Executor, work string) (sandbox.Syncer, *mcpsession.LockedBuffer, io.WriteCloser, chan error) {
	t.Helper()
	spec, _, errb := fakeSpec(work, "")
	spec.Path, spec.Args = "/bin/sh", []string{"-c", syncScript}
	out := &mcpsession.LockedBuffer{}
	spec.Stdout = out
	inR, inW := io.Pipe()
	spec.Stdin = inR
	synced := make(chan sandbox.Syncer, 1)
	spec.Sync = func(s sandbox.Syncer) { synced <- s }
	started := make(chan sandbox.ContainerReport, 1)
	spec.Started = func(r sandbox.ContainerReport) { started <- r }
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		x, err := e.Run(ctx, spec)
		if err == nil && x.Code != 0 {
			err = errors.New("the run failed: " + errb.String())
		}
		done <- err
	}()
	t.Cleanup(func() { _ = inW.Close(); <-done })
	var s sandbox.Syncer
	select {
	case s = <-synced:
	case err := <-done:
		t.Fatalf("the run ended before it got a Syncer: %v", err)
	}
	if r := <-started; len(r.Mounts) == 0 {
		t.Errorf("the started report names no mount: %+v", r)
	}
	return s, out, inW, done
}

// waitFor waits until the run's stdout says word.
func waitFor(t *testing.T, out *mcpsession.LockedBuffer, word string) {
	t.Helper()
	if !mcpsession.Eventually(2*time.Minute, func() bool { return strings.Contains(out.String(), word) }) {
		t.Fatalf("the run never said %s: %q", word, out.String())
	}
}

// TestSyncBetweenTurns: a running pod's changes come back on a Sync, while it runs, and again on
// the next: turn 1's new file, then turn 2's removal of it (which only a manifest renewed by the
// first Sync can tell) and its new file; the copy back of the end agrees.
func TestSyncBetweenTurns(t *testing.T) {
	e := clusterExecutor(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "keep.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(work, 0o777)
	s, out, in, done := syncRun(t, e, work)
	ctx := context.Background()

	waitFor(t, out, "ready1")
	if err := s.Sync(ctx); err != nil {
		t.Fatalf("sync after turn 1: %v", err)
	}
	if got := readTrimmed(filepath.Join(work, "a.txt")); got != "one" {
		t.Fatalf("turn 1's a.txt did not come back: %q", got)
	}
	_, _ = in.Write([]byte("\n"))
	waitFor(t, out, "ready2")
	if err := s.Sync(ctx); err != nil {
		t.Fatalf("sync after turn 2: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "a.txt")); !os.IsNotExist(err) || readTrimmed(filepath.Join(work, "b.txt")) != "two" {
		t.Fatalf("turn 2's changes did not come back (a.txt: %v, b.txt %q)", err, readTrimmed(filepath.Join(work, "b.txt")))
	}
	_ = in.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil // for the cleanup
	entries, _ := os.ReadDir(work)
	if len(entries) != 2 || readTrimmed(filepath.Join(work, "keep.txt")) != "keep" {
		t.Errorf("after the end the tree is %v, want keep.txt and b.txt", entries)
	}
}

// TestSyncRefusesHostileKeeper: a Sync reads the pod's archive through the copy back's checks:
// a keeper that answers with a name with .. (the hostile image's, once the run wrote its marker)
// is refused, and the host's tree stays as it was; so is the copy back of the end.
func TestSyncRefusesHostileKeeper(t *testing.T) {
	e := clusterExecutor(t)
	e.cfg.Image, e.cfg.Helper = hostileImage(t), hostileHelper
	root := t.TempDir()
	work := filepath.Join(root, "repo")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(work, 0o777)
	for name, body := range map[string]string{"keep.txt": "keep\n", ".hostile": "dotdot\n"} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, out, in, done := syncRun(t, e, work)
	waitFor(t, out, "ready1")
	if err := s.Sync(context.Background()); !errors.Is(err, archive.ErrRefused) {
		t.Fatalf("sync: got %v, want the hostile archive refused", err)
	}
	check := func(when string) {
		entries, _ := os.ReadDir(work)
		around, _ := os.ReadDir(root)
		if len(entries) != 2 || len(around) != 1 || readTrimmed(filepath.Join(work, "keep.txt")) != "keep" {
			t.Errorf("%s: the checkout is %v and beside it %v, want them untouched", when, entries, around)
		}
	}
	check("after the refused sync")
	_, _ = in.Write([]byte("\n"))
	waitFor(t, out, "ready2")
	_ = in.Close()
	var cb *sandbox.CopyBackError
	if err := <-done; !errors.As(err, &cb) {
		t.Errorf("the end: got %v, want a refused copy back", err)
	}
	done <- nil
	check("after the end")
}

func readTrimmed(p string) string { b, _ := os.ReadFile(p); return strings.TrimSpace(string(b)) }
