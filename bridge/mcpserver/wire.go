package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxQueuedNotifications bounds the progress notifications waiting for a slow client; beyond it
// new ones are dropped (progress is advisory), responses never are.
const maxQueuedNotifications = 256

// errCancelledBeforeStart answers a request the client cancelled while it still waited in
// mcp-go's queue; the wire withholds that answer like any other to a cancelled request.
var errCancelledBeforeStart = errors.New("request cancelled by the client before it started")

// wire owns the server's stdout and watches its stdin, to keep two promises of the MCP spec
// that mcp-go v1.2.1's stdio transport does not keep on its own:
//
//   - No notification for a request after its response. mcp-go writes a result directly but a
//     notification through a channel drained by another goroutine, so the last progress message
//     of a call often reached the client after its result. Here every line — mcp-go's responses
//     (through Write) and our progress notifications (through progress) — enters one FIFO
//     drained by one goroutine, and progress for a request that was answered or cancelled is
//     dropped at the door; progress still queued when the cancel arrives is dropped too (none
//     starts to be written after the server read the cancel: see writeNote).
//   - No response to a request the client cancelled ("the receiver SHOULD NOT send a response
//     for the cancelled request"). The stdin tap sees notifications/cancelled before mcp-go does
//     (mcp-go reads through it), marks the request, and the response mcp-go writes for it later
//     is dropped and logged instead.
//
// Once stopped reports true (the server got SIGINT or SIGTERM) responses and progress for
// requests still in flight are withheld too: the signal almost always comes from the client
// itself — Claude Code sends SIGINT to its server when it exits or the user interrupts it, and
// aborts its calls at the same moment; it reports an answer it no longer waits for as "a
// response for an unknown message ID". (After stdin closes, mcp-go cancels the calls but the
// client may still read: those are answered.)
//
// It relies on mcp-go writing each message as one line ending in '\n' (it does:
// StdioServer.writeResponse); partial writes are buffered until the newline. Safe for concurrent
// use. close flushes what is queued and stops the writer; the wire is not reusable.
type wire struct {
	out     io.Writer
	log     *slog.Logger
	stopped func() bool
	// gap is the least time between writing a request's last notification and writing its
	// response (see progress.Close for why). Enforced here, at the moment of writing, so a
	// writer delayed by load cannot put the two into one read on the client.
	gap time.Duration
	// take, when set, answers a request itself before mcp-go reads it (the server's extension,
	// tasks.go): its response is queued like mcp-go's. Set before the first read.
	take func(line []byte) ([]byte, bool)

	// noteMu is held while a notification is checked and written, and while a cancel is
	// recorded (see writeNote). Taken before mu, never while holding it.
	noteMu   sync.Mutex
	mu       sync.Mutex
	cond     *sync.Cond // signals the writer: queue grew or closed
	queue    []outgoing
	notes    int // notifications in queue
	closed   bool
	partial  []byte              // mcp-go's bytes after the last newline
	requests map[string]*request // in flight, by JSON-RPC id
	tokens   map[string]*request // in flight with a progress token, by token
	done     chan struct{}       // closed when the writer has stopped

	sent, dropped, withheld int // progress queued, progress dropped, responses withheld
}

// outgoing is one line for stdout; written receives the write's error for responses (nil
// channel for notifications, which nobody waits for).
type outgoing struct {
	line    []byte
	written chan error
	req     *request // the request a notification is for or a response answers; may be nil
	n       int      // a notification's progress value
}

// request is what the wire knows about one request from the client.
type request struct {
	id        string    // key of its JSON-RPC id
	rawID     string    // as the client sent it, for the log
	token     string    // key of its progress token; "" when it has none
	cancelled bool      // notifications/cancelled arrived for it
	lastNote  time.Time // when its last notification was written (set by the writer)
	// dropLogged: the writer logged that it dropped queued progress after the cancel.
	dropLogged bool
	// lastProgress is the progress value of its last notification written (set by the writer).
	lastProgress int
}

func newWire(out io.Writer, log *slog.Logger, stopped func() bool, gap time.Duration) *wire {
	w := &wire{out: out, log: log, stopped: stopped, gap: gap, requests: map[string]*request{}, tokens: map[string]*request{}, done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// run is the only goroutine that writes to out.
func (w *wire) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.cond.Wait()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		o := w.queue[0]
		w.queue[0] = outgoing{}
		w.queue = w.queue[1:]
		if o.written == nil {
			w.notes--
			w.mu.Unlock()
			w.writeNote(o)
			continue
		}
		var wait time.Duration
		if o.req != nil && !o.req.lastNote.IsZero() {
			wait = w.gap - time.Since(o.req.lastNote)
		}
		w.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait) // only this request's response waits; at most gap
		}
		_, err := w.out.Write(o.line)
		o.written <- err
	}
}

// writeNote writes one notification unless its request was cancelled meanwhile: it was queued
// before the cancel arrived, but the client stopped listening for its token when it sent the
// cancel (Claude Code logs "a progress notification for an unknown token"). The check and the
// write happen under noteMu, which observe holds while it marks a request cancelled, so no
// notification for a request starts to be written after the server read its cancel.
func (w *wire) writeNote(o outgoing) {
	w.noteMu.Lock()
	defer w.noteMu.Unlock()
	w.mu.Lock()
	if o.req != nil && o.req.cancelled {
		w.sent--
		w.dropped++
		first := !o.req.dropLogged
		o.req.dropLogged = true
		w.mu.Unlock()
		if first {
			w.log.Debug("queued progress dropped: the client cancelled the request", "id", o.req.rawID)
		}
		return
	}
	w.mu.Unlock()
	_, _ = w.out.Write(o.line)
	if o.req != nil {
		w.mu.Lock()
		o.req.lastNote = time.Now()
		o.req.lastProgress = o.n
		w.mu.Unlock()
	}
}

// pushLocked queues a line; w.mu is held.
func (w *wire) pushLocked(o outgoing) {
	if o.written == nil {
		w.notes++
	}
	w.queue = append(w.queue, o)
	w.cond.Signal()
}

// close writes what is queued, then stops the writer. Called once, after mcp-go stopped writing.
func (w *wire) close() {
	w.mu.Lock()
	w.closed = true
	w.cond.Signal()
	w.mu.Unlock()
	<-w.done
	w.mu.Lock()
	sent, dropped, withheld := w.sent, w.dropped, w.withheld
	w.mu.Unlock()
	w.log.Debug("stdio wire closed", "progressSent", sent, "progressDropped", dropped, "responsesWithheld", withheld)
}

// Write takes mcp-go's output (responses, and whatever else mcp-go writes) and returns after
// its complete lines were written to stdout, or withheld.
func (w *wire) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, io.ErrClosedPipe
	}
	w.partial = append(w.partial, p...)
	var waits []chan error
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := append([]byte(nil), w.partial[:i+1]...)
		w.partial = append(w.partial[:0], w.partial[i+1:]...)
		r, ok := w.admitLocked(line)
		if !ok {
			continue
		}
		ch := make(chan error, 1)
		w.pushLocked(outgoing{line: line, written: ch, req: r})
		waits = append(waits, ch)
	}
	w.mu.Unlock()
	for _, ch := range waits {
		if err := <-ch; err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// admitLocked retires the request a response answers and reports whether the line may be
// written: false for the response to a request the client cancelled. It returns the request the
// line answers (nil for anything else).
func (w *wire) admitLocked(line []byte) (*request, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "" {
		return nil, true // a notification or a request of the server's own: not an answer
	}
	key, ok := rawKey(m.ID)
	if !ok {
		return nil, true
	}
	r := w.requests[key]
	if r == nil {
		return nil, true
	}
	w.retireLocked(r)
	switch {
	case r.cancelled:
		w.log.Info("response withheld: the client cancelled the request", "id", r.rawID)
	case w.stopped():
		w.log.Info("response withheld: the server is stopping on a signal", "id", r.rawID)
	default:
		return r, true
	}
	w.withheld++
	return r, false
}

func (w *wire) retireLocked(r *request) {
	if w.requests[r.id] == r {
		delete(w.requests, r.id)
	}
	if r.token != "" && w.tokens[r.token] == r {
		delete(w.tokens, r.token)
	}
}

// progress queues notifications/progress for the request that carries token, unless that
// request was already answered or cancelled (or too many notifications wait). It never blocks
// on stdout. It reports whether the notification was queued.
func (w *wire) progress(token mcp.ProgressToken, n int, msg string) bool {
	key, ok := anyKey(token)
	if !ok {
		return false
	}
	line, err := json.Marshal(mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationProgress),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{
				"progressToken": token,
				"progress":      n,
				"message":       msg,
			}},
		},
	})
	if err != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.tokens[key] == nil || w.notes >= maxQueuedNotifications || w.stopped() {
		w.dropped++
		return false
	}
	w.sent++
	w.pushLocked(outgoing{line: append(line, '\n'), req: w.tokens[key], n: n})
	return true
}

// cancelled reports whether the client cancelled the request with this id (as mcp-go decoded it).
func (w *wire) cancelled(id any) bool {
	key, ok := anyKey(id)
	if !ok {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.requests[key]
	return r != nil && r.cancelled
}

// observe learns from one line the client sent: a request starts being tracked; a
// notifications/cancelled marks its request and stops its progress at once.
func (w *wire) observe(line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
			Meta      struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method == "" {
		return
	}
	if m.Method == string(mcp.MethodNotificationCancelled) {
		// Waits for a notification being written (it started before this cancel was read), and
		// keeps the writer from starting another for the request until it is marked.
		w.noteMu.Lock()
		defer w.noteMu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if id, ok := rawKey(m.ID); ok {
		r := &request{id: id, rawID: string(m.ID)}
		if tok, ok := rawKey(m.Params.Meta.ProgressToken); ok {
			r.token = tok
			w.tokens[tok] = r
		}
		w.requests[id] = r
		return
	}
	if m.Method != string(mcp.MethodNotificationCancelled) {
		return
	}
	id, ok := rawKey(m.Params.RequestID)
	r := w.requests[id]
	if !ok || r == nil {
		w.log.Debug("cancel for a request that is not in flight", "id", string(m.Params.RequestID))
		return
	}
	r.cancelled = true
	if r.token != "" && w.tokens[r.token] == r {
		delete(w.tokens, r.token)
	}
	// progressWritten: no notification for the request with a higher progress value is written
	// from now on (a client that still receives one up to it got it before the cancel arrived).
	w.log.Info("the client cancelled a request; stopping it, no response will be sent", "id", r.rawID, "reason", m.Params.Reason, "progressWritten", r.lastProgress)
}

// answer offers line to take; when it answers, the response is queued (withheld once stopped)
// and mcp-go never reads the line.
func (w *wire) answer(line []byte) bool {
	if w.take == nil {
		return false
	}
	resp, ok := w.take(line)
	if !ok {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.stopped() {
		w.withheld++
		return true
	}
	w.pushLocked(outgoing{line: append(resp, '\n'), written: make(chan error, 1)})
	return true
}

// reader returns in as mcp-go should read it: the same bytes, each line observed first.
func (w *wire) reader(in io.Reader) io.Reader {
	return &tap{w: w, r: bufio.NewReader(in)}
}

type tap struct {
	w   *wire
	r   *bufio.Reader
	buf []byte
	err error
}

func (t *tap) Read(p []byte) (int, error) {
	for len(t.buf) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		line, err := t.r.ReadBytes('\n')
		t.err = err
		if len(line) > 0 && !t.w.answer(line) {
			t.w.observe(line)
			t.buf = line
		}
	}
	n := copy(p, t.buf)
	t.buf = t.buf[n:]
	return n, nil
}

// rawKey is the identity of a JSON-RPC id or progress token as sent (a string or a number);
// ok is false for null, absent or anything else.
func rawKey(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return anyKey(v)
}

// anyKey is rawKey for a value decoded by encoding/json (mcp-go's ids and tokens), so "1"
// and 1 stay distinct and 1 and 1.0 are the same.
func anyKey(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return "s:" + x, true
	case float64:
		return "n:" + strconv.FormatFloat(x, 'g', -1, 64), true
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return "", false
		}
		return anyKey(f)
	case int:
		return anyKey(float64(x))
	case int64:
		return anyKey(float64(x))
	default:
		return "", false
	}
}
