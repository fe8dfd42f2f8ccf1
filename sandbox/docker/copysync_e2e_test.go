//go:build e2e

package docker

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// syncScript writes its files (the marker that the run ran) and waits for a line; then removes
// a.txt, writes b.txt and waits again: two turns of a kept process.
const syncScript = `echo one > a.txt; echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa > big.txt; echo ready1; read x; rm a.txt; echo two > b.txt; echo ready2; read x; exit 0`

// copySyncRun starts syncScript in a copy-mode container with data as its writable tree; it
// returns the run's Syncer, its stdout, its stdin and the channel of its end.
func copySyncRun(t *testing.T, e *Executor, data string) (sandbox.Syncer, *watchBuffer, io.WriteCloser, chan error) {
	t.Helper()
	out := newWatchBuffer()
	inR, inW := io.Pipe()
	synced := make(chan sandbox.Syncer, 1)
	spec := sandbox.Spec{Path: "/bin/sh", Args: []string{"-c", syncScript}, Env: []string{"HOME=/tmp"}, Dir: data,
		Stdin: inR, Stdout: out, Stderr: io.Discard,
		Mounts: []sandbox.Mount{{Source: data, Target: data, Return: sandbox.Return{Tree: true}}},
		Tmpfs:  []sandbox.Tmpfs{{Target: "/tmp"}},
		Labels: map[string]string{testLabel: t.Name()},
		Sync:   func(s sandbox.Syncer) { synced <- s }}
	done := make(chan error, 1)
	go func() {
		x, err := e.Run(context.Background(), spec)
		if err == nil && x.Code != 0 {
			err = errors.New("the run failed: exit " + strconv.Itoa(x.Code))
		}
		done <- err
	}()
	t.Cleanup(func() { _ = inW.Close() })
	select {
	case s := <-synced:
		return s, out, inW, done
	case err := <-done:
		t.Fatalf("the run ended before it got a Syncer: %v", err)
	}
	return nil, nil, nil, nil
}

// wait waits until the run's stdout says word.
func wait(t *testing.T, out *watchBuffer, word string) {
	t.Helper()
	select {
	case <-out.seen(word):
	case <-time.After(time.Minute):
		t.Fatalf("the run never said %s: %q", word, out.String())
	}
}

func syncData(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	writeTestFile(t, filepath.Join(data, "keep.txt"), "keep\n")
	return data
}

// TestCopySyncBetweenTurns: a copy-mode container's changes come back on a Sync while it runs,
// and again on the next: turn 1's new file, then turn 2's removal of it (which only the record
// renewed by the first Sync can tell) and its new file; the copy back of the end agrees.
func TestCopySyncBetweenTurns(t *testing.T) {
	needFakeImage(t)
	e := newTestExecutor(t, WithImage(fakeImage), WithMounts(MountsCopy), WithNetwork("none"))
	data := syncData(t)
	s, out, in, done := copySyncRun(t, e, data)
	wait(t, out, "ready1")
	if err := s.Sync(t.Context()); err != nil {
		t.Fatalf("sync after turn 1: %v", err)
	}
	if got := readTestFile(t, filepath.Join(data, "a.txt")); got != "one\n" {
		t.Fatalf("turn 1's a.txt did not come back: %q", got)
	}
	_, _ = in.Write([]byte("\n"))
	wait(t, out, "ready2")
	if err := s.Sync(t.Context()); err != nil {
		t.Fatalf("sync after turn 2: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "a.txt")); !os.IsNotExist(err) || readTestFile(t, filepath.Join(data, "b.txt")) != "two\n" {
		t.Fatalf("turn 2's changes did not come back (a.txt: %v)", err)
	}
	_ = in.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 3 {
		t.Errorf("after the end the tree is %v, want keep.txt, big.txt and b.txt", entries)
	}
	noCopyLeftovers(t, e)
}

// TestCopySyncRefusesOverLimits: a Sync reads the container's archive through the copy back's
// checks and limits: a file over the executor's limit (written with the run's marker) is refused,
// the tree comes back not at all, and neither does it at the end.
func TestCopySyncRefusesOverLimits(t *testing.T) {
	needFakeImage(t)
	small := archive.DefaultLimits
	small.File = 16
	e := newTestExecutor(t, WithImage(fakeImage), WithMounts(MountsCopy), WithNetwork("none"), WithCopyLimits(small))
	data := syncData(t)
	s, out, in, done := copySyncRun(t, e, data)
	wait(t, out, "ready1")
	if err := s.Sync(t.Context()); !errors.Is(err, archive.ErrRefused) {
		t.Fatalf("sync: got %v, want big.txt refused", err)
	}
	check := func(when string) {
		if entries, _ := os.ReadDir(data); len(entries) != 1 {
			t.Errorf("%s: the tree is %v, want keep.txt alone", when, entries)
		}
	}
	check("after the refused sync")
	_, _ = in.Write([]byte("\n"))
	wait(t, out, "ready2")
	_ = in.Close()
	var cb *sandbox.CopyBackError
	if err := <-done; !errors.As(err, &cb) {
		t.Errorf("the end: got %v, want a refused copy back", err)
	}
	check("after the end")
	noCopyLeftovers(t, e)
}
