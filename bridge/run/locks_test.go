package run

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// gate is a step that blocks in its run until the test opens it, then answers PONG.
func gate(t *testing.T, open <-chan struct{}) step {
	s := pong(t)
	s.before = func(context.Context) { <-open }
	return s
}

// said collects one call's progress.
type said struct {
	mu  sync.Mutex
	msg []string
}

func (s *said) progress(m string) {
	s.mu.Lock()
	s.msg = append(s.msg, m)
	s.mu.Unlock()
}

func (s *said) has(phrase string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.msg, func(m string) bool { return strings.Contains(m, phrase) })
}

func count(list []string, name string) int {
	n := 0
	for _, e := range list {
		if e == name {
			n++
		}
	}
	return n
}

// TestLockScope: applies on one checkout run one after the other (the second waits before it
// records any evidence, and says so); applies on different checkouts and analysis calls do not
// wait for each other; MaxConcurrent bounds all calls, in arrival order, with queue progress;
// a cancel while queued ends the call before it touched anything.
func TestLockScope(t *testing.T) {
	cases := []struct {
		name      string
		max       int
		first     Tool
		second    Tool
		otherRepo bool // the second call runs in another checkout
		queued    string
		cancel    bool
		message   string
	}{
		{name: "applies on one checkout", first: ApplyClineEdits, second: ApplyClineEdits,
			queued: "queued, position 1: another apply_cline_edits on this checkout runs first"},
		{name: "cancelled while waiting for the checkout", first: ApplyClineEdits, second: ApplyClineEdits, cancel: true,
			queued:  "another apply_cline_edits on this checkout runs first",
			message: "cancelled while it waited for another apply_cline_edits on the same checkout"},
		{name: "applies on different checkouts", first: ApplyClineEdits, second: ApplyClineEdits, otherRepo: true},
		{name: "an analysis beside an apply", first: ApplyClineEdits, second: AskCline},
		{name: "two analyses", first: AskClineWorkspace, second: AskCline},
		{name: "max concurrent", max: 1, first: AskCline, second: AskCline,
			queued: "queued, position 1: the server runs at most 1 calls at once"},
		{name: "cancelled while queued", max: 1, first: AskCline, second: ApplyClineEdits, cancel: true,
			queued:  "the server runs at most 1 calls at once",
			message: "cancelled while it was queued (at most 1 calls run at once)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				open := make(chan struct{})
				h := newHarness(t, gate(t, open), pong(t))
				h.cfg.MaxConcurrent = tc.max
				r := h.runner()
				firstDone := make(chan Result)
				go func() { firstDone <- r.Do(t.Context(), h.call(tc.first), nil) }()
				synctest.Wait() // the first call is inside its run

				c := h.call(tc.second)
				if tc.otherRepo {
					c.Cwd = t.TempDir()
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var second said
				secondDone := make(chan Result)
				go func() { secondDone <- r.Do(ctx, c, second.progress) }()
				synctest.Wait()

				runs := count(h.ev.list(), "host.Run")
				if tc.queued != "" {
					if runs != 1 || !second.has(tc.queued) {
						t.Errorf("second call not queued: %d runs, progress %q", runs, second.msg)
					}
					if tc.second == ApplyClineEdits && count(h.ev.list(), "git.Evidence") > 1 {
						t.Errorf("the queued apply recorded evidence: %q", h.ev.list())
					}
				} else if runs != 2 {
					t.Errorf("the second call did not run beside the first: %q", h.ev.list())
				}
				var res2 Result
				if tc.cancel {
					cancel()
					res2 = <-secondDone
				}
				close(open)
				res1 := <-firstDone
				if !tc.cancel {
					res2 = <-secondDone
				}
				wantResult(t, res1, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
				if tc.cancel {
					wantResult(t, res2, result{kind: "cancelled"})
					wantContains(t, "message", res2.Message, tc.message)
					if got := count(h.ev.list(), "host.Run"); got != 1 {
						t.Errorf("%d runs after the cancel, want the first call's only", got)
					}
				} else {
					wantResult(t, res2, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
				}
				if tc.queued != "" && !tc.cancel && tc.second == ApplyClineEdits {
					// the second apply recorded its evidence only after the first compared its own
					ev := h.ev.list()
					if i, j := slices.Index(ev, "git.Compare"), slices.Index(ev[1:], "git.Evidence")+1; j <= i {
						t.Errorf("second apply's evidence before the first one's comparison: %q", ev)
					}
				}
				if r.slots.running != 0 || r.slots.waiting() != 0 {
					t.Errorf("slots left: running %d waiting %d", r.slots.running, r.slots.waiting())
				}
				h.checkClean()
			})
		})
	}
}

// TestCheckoutLockAcrossProcesses: with CheckoutLocks, an apply waits for another process's
// lock on its checkout (told as progress) and runs once it is released; a cancel while it
// waits ends it; a lock dir that cannot be used is a warning, not a failure.
func TestCheckoutLockAcrossProcesses(t *testing.T) {
	t.Run("waits for the other process", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			h := newHarness(t, pong(t))
			h.cfg.CheckoutLocks = filepath.Join(t.TempDir(), "locks")
			other, err := lockCheckout(t.Context(), h.cfg.CheckoutLocks, checkoutKey(h.cwd), func() {})
			if err != nil {
				t.Fatal(err)
			}
			var p said
			done := make(chan Result)
			go func() { done <- h.runner().Do(t.Context(), h.call(ApplyClineEdits), p.progress) }()
			synctest.Wait()
			if len(h.ev.list()) != 0 || !p.has("queued: another cline-mcp process runs apply_cline_edits on this checkout") {
				t.Errorf("did not wait for the other process: events %q progress %q", h.ev.list(), p.msg)
			}
			other()
			res := <-done
			wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
			h.checkClean()
		})
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			h := newHarness(t)
			h.cfg.CheckoutLocks = filepath.Join(t.TempDir(), "locks")
			other, err := lockCheckout(t.Context(), h.cfg.CheckoutLocks, checkoutKey(h.cwd), func() {})
			if err != nil {
				t.Fatal(err)
			}
			defer other()
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan Result)
			go func() { done <- h.do(ctx, h.call(ApplyClineEdits)) }()
			synctest.Wait()
			cancel()
			res := <-done
			wantResult(t, res, result{kind: "cancelled"})
			wantContains(t, "message", res.Message, "another cline-mcp process's apply_cline_edits")
			wantEvents(t, h)
		})
	})
	t.Run("unusable lock dir", func(t *testing.T) {
		h := newHarness(t, pong(t))
		file := filepath.Join(t.TempDir(), "not-a-dir")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		h.cfg.CheckoutLocks = file
		res := h.do(t.Context(), h.call(ApplyClineEdits))
		wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
		wantWarning(t, res, "applies of other cline-mcp processes on this checkout were not excluded")
	})
}
