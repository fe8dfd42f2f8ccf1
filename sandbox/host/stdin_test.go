//go:build unix

package host

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestAttachedStdin: with Spec.Stdin the child reads what the caller writes, and the reader's EOF
// is the child's EOF.
func TestAttachedStdin(t *testing.T) {
	var stdout bytes.Buffer
	spec := childSpec(t, "stdin")
	spec.Stdout = &stdout
	spec.Stdin = strings.NewReader("hello, child")
	if _, err := run(t, spec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := stdout.String(), "bytes=12 err=<nil> char=false\n"; got != want {
		t.Errorf("child's view of stdin: got %q, want %q", got, want)
	}
}

// TestAttachedStdinOpenWriterCancel: a child that waits for stdin whose writer stays open is
// stopped when ctx ends, and Run returns; closing the writer afterwards ends the copy.
func TestAttachedStdinOpenWriterCancel(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	spec := childSpec(t, "stdin")
	spec.Stdin = pr
	spec.StopGrace = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	go func() { _, _ = pw.Write([]byte("partial")) }() // the child reads it; more never comes
	done := make(chan struct{})
	go func() {
		defer close(done)
		x, err := New().Run(ctx, spec)
		if err != nil || !x.Stopped {
			t.Errorf("Run: %+v %v, want a stopped run", x, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("Run did not return after ctx ended while the stdin writer was open")
	}
	// The copy ends at its next read once the child's pipe is closed.
	go func() { _, _ = pw.Write([]byte("late")) }()
}
