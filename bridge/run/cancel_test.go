package run

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// TestCancelBeforeStart: a call whose context already ended touches nothing.
func TestCancelBeforeStart(t *testing.T) {
	for _, tool := range []Tool{AskCline, ApplyClineEdits, AskClineWorkspace} {
		t.Run(string(tool), func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			res := h.do(ctx, h.call(tool))
			wantResult(t, res, result{kind: "cancelled"})
			wantContains(t, "message", res.Message, "cancelled before it started")
			wantEvents(t, h)
		})
	}
}

// TestCancelWhileWaiting: a cancel while the call waits for the settings hold or for its
// worktree ends it before Cline starts, and whatever it took is given back.
func TestCancelWhileWaiting(t *testing.T) {
	cases := []struct {
		name    string
		tool    Tool
		setup   func(h *harness)
		events  []string
		message string
	}{
		{name: "settings hold", tool: AskCline, setup: func(h *harness) { h.set.blockBegin = true },
			events: []string{"settings.Begin"}, message: "while it waited for a merge of refreshed credentials"},
		{name: "worktree", tool: AskClineWorkspace, setup: func(h *harness) { h.wts.blockAcquire = true },
			events: []string{"git.TopLevel", "wt.Acquire"}, message: "while the worktree was being created"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t)
				tc.setup(h)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan Result)
				go func() { done <- h.do(ctx, h.call(tc.tool)) }()
				synctest.Wait()
				cancel()
				res := <-done
				wantResult(t, res, result{kind: "cancelled"})
				wantContains(t, "message", res.Message, tc.message)
				wantEvents(t, h, tc.events...)
			})
		})
	}
}

// TestCancelDuringBackoff: a cancel during the pause before the retry ends the call with what
// the first attempt said; the settings hold is ended and the epilogue still runs.
func TestCancelDuringBackoff(t *testing.T) {
	for _, tc := range []struct {
		tool   Tool
		events []string
	}{
		{AskCline, []string{"settings.Begin", "host.Run", "backoff", "hold.End"}},
		{ApplyClineEdits, []string{"git.Evidence", "settings.Begin", "host.Run", "git.Inspect", "backoff", "hold.End", "git.Inspect", "git.Compare"}},
		{AskClineWorkspace, []string{"git.TopLevel", "wt.Acquire", "settings.Begin", "host.Run", "backoff", "hold.End", "wt.Release"}},
	} {
		t.Run(string(tc.tool), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t, rateLimited(t))
				ctx, cancel := context.WithCancel(t.Context())
				h.cfg.Backoff = func() time.Duration {
					h.ev.add("backoff")
					cancel()
					return 30 * time.Second // a retry fits the call's 60 s
				}
				res := h.do(ctx, h.call(tc.tool))
				wantResult(t, res, result{kind: "cancelled", attempts: 1, isolation: []sandbox.Isolation{host}})
				wantContains(t, "message", res.Message, "cancelled while waiting to retry after transient_provider_error: Rate limit reached")
				wantContains(t, "stdout tail", res.StdoutTail, "Rate limit reached")
				wantEvents(t, h, tc.events...)
				checkEpilogueAlive(t, h, tc.tool)
			})
		})
	}
}

// TestCancelWhileRunning: a cancel while Cline runs stops it (the executor reports the stop),
// is not retried, and the epilogue runs on a live context: merge-back and copy removal, the
// hold's End, the diff of apply_cline_edits, the worktree's release.
func TestCancelWhileRunning(t *testing.T) {
	for _, tc := range []struct {
		tool   Tool
		iso    sandbox.Isolation
		events []string
	}{
		{AskCline, host, []string{"settings.Begin", "host.Run", "hold.End"}},
		{AskCline, dock, []string{"settings.EnsureFresh", "settings.PrivateCopy", "git.Open", "docker.Run", "settings.MergeAllowed", "copy.Close"}},
		{ApplyClineEdits, host, []string{"git.Evidence", "settings.Begin", "host.Run", "hold.End", "git.Inspect", "git.Compare"}},
		{ApplyClineEdits, dock, []string{"git.Evidence", "settings.EnsureFresh", "settings.PrivateCopy", "docker.Run", "settings.MergeAllowed", "copy.Close", "git.Inspect", "git.Compare"}},
		{AskClineWorkspace, host, []string{"git.TopLevel", "wt.Acquire", "settings.Begin", "host.Run", "hold.End", "wt.Release"}},
		{AskClineWorkspace, dock, []string{"git.TopLevel", "wt.Acquire", "settings.EnsureFresh", "settings.PrivateCopy", "docker.Run", "settings.MergeAllowed", "copy.Close", "wt.Touched", "wt.Release"}},
	} {
		t.Run(string(tc.tool)+"/"+string(tc.iso), func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				s := hang(t)
				s.before = func(context.Context) { cancel() }
				h := newHarness(t, s)
				c := h.call(tc.tool)
				c.Isolation = tc.iso
				res := h.do(ctx, c)
				wantResult(t, res, result{kind: "cancelled", attempts: 1, isolation: []sandbox.Isolation{tc.iso}})
				wantContains(t, "message", res.Message, "cancelled by the client")
				wantEvents(t, h, tc.events...)
				checkEpilogueAlive(t, h, tc.tool)
			})
		})
	}
}

// TestCancelDuringEpilogue: a cancel that arrives while the epilogue inspects the checkout does
// not stop it: the comparison runs on a live context and the diff is reported.
func TestCancelDuringEpilogue(t *testing.T) {
	h := newHarness(t, pong(t))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	before := h.git.before
	h.git.inspect = []func(context.Context) (git.Evidence, error){func(context.Context) (git.Evidence, error) {
		cancel()
		return before, nil
	}}
	res := h.do(ctx, h.call(ApplyClineEdits))
	wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
	wantEvents(t, h, "git.Evidence", "settings.Begin", "host.Run", "hold.End", "git.Inspect", "git.Compare")
	if res.Diff == nil || *res.Diff == "" {
		t.Errorf("no diff after a cancel during the epilogue")
	}
	checkEpilogueAlive(t, h, ApplyClineEdits)
}

// checkEpilogueAlive: the epilogue's git and worktree work saw a live context.
func checkEpilogueAlive(t *testing.T, h *harness, tool Tool) {
	t.Helper()
	switch tool {
	case ApplyClineEdits:
		h.git.mu.Lock()
		defer h.git.mu.Unlock()
		if !h.git.compareAlive {
			t.Errorf("Compare ran on a cancelled context")
		}
	case AskClineWorkspace:
		h.wts.mu.Lock()
		defer h.wts.mu.Unlock()
		if !h.wts.releaseAlive {
			t.Errorf("Release ran on a cancelled context")
		}
	}
}
