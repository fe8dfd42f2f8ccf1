package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// notifier queues one notifications/progress; it never blocks on the client. *wire implements
// it and drops notifications for requests that were answered or cancelled.
type notifier interface {
	progress(token mcp.ProgressToken, n int, msg string) bool
}

// progress turns the runner's live messages into notifications/progress for one request:
// throttled (the latest message wins), plus a heartbeat whenever nothing was sent for a while,
// so clients whose deadlines reset on progress stay alive during long, silent model calls.
// Messages reaching it are already redacted by the runner. Notifications go through the same
// ordered writer as the result (see wire), so none reaches the client after the result.
type progress struct {
	out      notifier
	ctx      context.Context
	token    mcp.ProgressToken
	throttle time.Duration
	start    time.Time

	mu      sync.Mutex
	n       int
	last    time.Time
	lastMsg string
	pending string
	timer   *time.Timer
	closed  bool
}

func newProgress(ctx context.Context, out notifier, token mcp.ProgressToken, throttle, heartbeat time.Duration) *progress {
	now := time.Now()
	// No "started" message, and the throttle counts from the start: a call that ends within the
	// first throttle interval sends no progress at all, so nothing can race its result.
	p := &progress{out: out, ctx: ctx, token: token, throttle: throttle, start: now, last: now}
	if token == nil {
		p.closed = true
		return p
	}
	go p.heartbeat(heartbeat)
	return p
}

// Report is the run.Progress callback. Safe for concurrent use.
func (p *progress) Report(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if wait := p.throttle - time.Since(p.last); wait > 0 {
		p.pending = msg
		if p.timer == nil {
			p.timer = time.AfterFunc(wait, p.flush)
		}
		return
	}
	p.sendLocked(msg)
}

func (p *progress) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	if p.closed || p.pending == "" {
		return
	}
	p.sendLocked(p.pending)
}

func (p *progress) heartbeat(every time.Duration) {
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		switch {
		case time.Since(p.last) < every/2:
		case p.pending != "": // a message the throttle held back says more than a heartbeat
			p.sendLocked(p.pending)
		default:
			msg := fmt.Sprintf("still working (%ds)", int(time.Since(p.start).Seconds()))
			if p.lastMsg != "" {
				msg += ": " + p.lastMsg
			}
			p.emitLocked(msg)
		}
		p.mu.Unlock()
	}
}

// sendLocked sends a message of the run; the heartbeat repeats the last one.
func (p *progress) sendLocked(msg string) {
	if msg != "" {
		p.lastMsg = msg
	}
	p.emitLocked(msg)
}

// emitLocked sends msg. A heartbeat goes out through here only: it is never the lastMsg that
// the next heartbeat repeats, so heartbeats do not nest.
func (p *progress) emitLocked(msg string) {
	p.n++
	p.last = time.Now()
	p.pending = ""
	// Queued, never written here: the wire drops it when too many wait (progress is advisory)
	// or when the request was already answered or cancelled.
	p.out.progress(p.token, p.n, msg)
}

// Close ends progress for the request before the handler returns its result: a message still
// held back by the throttle is dropped (the result that follows says more), and the heartbeat
// stops. The wire writes the result after every notification of the request, and at least
// Options.Quiet after the last one: the TypeScript SDK (Claude Code, the MCP Inspector) handles a
// notification a microtask later than a response that arrives in the same read, and then
// reports the notification's token as unknown (modelcontextprotocol/typescript-sdk#2580).
// Dropping the held-back message means most results follow no recent notification and pay no
// pause at all.
func (p *progress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
	p.pending = ""
	p.closed = true
}
