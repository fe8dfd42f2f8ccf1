package docker

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestRunLeavesNoGoroutines runs each path in a synctest bubble: the bubble fails the test if
// any goroutine Run started (stream copier, the client's wait reader, the fake engine's) is
// still blocked when Run has returned.
func TestRunLeavesNoGoroutines(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*fakeClient, context.CancelFunc)
	}{
		{"normal exit", func(f *fakeClient, _ context.CancelFunc) { f.frames = frame(1, "x\n") }},
		{"stopped", func(f *fakeClient, cancel context.CancelFunc) {
			f.exitOnStop = true
			f.exitCode = 130
			f.onStart = cancel
		}},
		{"streams cut", func(f *fakeClient, _ context.CancelFunc) { f.holdStream = true }},
		{"start fails", func(f *fakeClient, _ context.CancelFunc) { f.startErr = errors.New("no") }},
		{"executable missing", func(f *fakeClient, _ context.CancelFunc) { f.statErr = errNotFound }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				tt.setup(f, cancel)
				e := newFakeExecutor(t, f)
				_, _ = e.Run(ctx, sandbox.Spec{Path: "/bin/x", Stdout: io.Discard, SettleGrace: time.Second})
				f.exit() // the fake engine's own goroutines end with the container
				synctest.Wait()
			})
		})
	}
}
