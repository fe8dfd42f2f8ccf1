package mcpserver

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWireBookkeeping: what the wire writes, withholds and drops, line by line, for one request
// the client cancels and one it does not ("1" and 1 are different ids).
func TestWireBookkeeping(t *testing.T) {
	var out bytes.Buffer
	stopped := false
	w := newWire(&out, slog.New(slog.NewTextHandler(io.Discard, nil)), func() bool { return stopped }, 50*time.Millisecond)
	w.observe([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"a"}}}` + "\n"))
	w.observe([]byte(`{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"_meta":{"progressToken":7}}}` + "\n"))
	if !w.progress("a", 1, "first") || !w.progress(float64(7), 1, "other") {
		t.Fatal("progress for requests in flight was not queued")
	}
	waitNoteWritten(t, w, "n:1") // written before the cancel arrives: it stays written
	w.observe([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"r"}}` + "\n"))
	if w.progress("a", 2, "after cancel") {
		t.Error("progress queued for a cancelled request")
	}
	if !w.cancelled(float64(1)) || w.cancelled("1") {
		t.Errorf("cancelled(1)=%v cancelled(\"1\")=%v, want true false", w.cancelled(float64(1)), w.cancelled("1"))
	}
	// mcp-go may write a message in pieces; the wire waits for the newline.
	for _, chunk := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n", `{"jsonrpc":"2.0",`, `"id":"1","result":{}}` + "\n"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if w.progress(float64(7), 2, "after its response") {
		t.Error("progress queued after the response to its request")
	}
	stopped = true
	w.observe([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call"}` + "\n"))
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	w.close()
	want := strings.Join([]string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"message":"first","progress":1,"progressToken":"a"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"message":"other","progress":1,"progressToken":7}}`,
		`{"jsonrpc":"2.0","id":"1","result":{}}`,
	}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("wire:\n%s\nwant:\n%s", out.String(), want)
	}
	if _, err := w.Write([]byte("{}\n")); err == nil {
		t.Error("Write after close succeeded")
	}
}

// stampWriter records when each line was written.
type stampWriter struct {
	lines []string
	at    []time.Time
}

func (s *stampWriter) Write(p []byte) (int, error) {
	s.lines = append(s.lines, string(p))
	s.at = append(s.at, time.Now())
	return len(p), nil
}

// TestWireGapAfterLastNotification: a response is written at least the gap after the last
// notification of its request was written, however quickly it follows.
func TestWireGapAfterLastNotification(t *testing.T) {
	const gap = 80 * time.Millisecond
	var out stampWriter
	w := newWire(&out, slog.New(slog.NewTextHandler(io.Discard, nil)), func() bool { return false }, gap)
	w.observe([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"a"}}}` + "\n"))
	w.observe([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call"}` + "\n"))
	if !w.progress("a", 1, "late news") {
		t.Fatal("progress not queued")
	}
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	w.close()
	if len(out.lines) != 3 || !strings.Contains(out.lines[0], "late news") || !strings.Contains(out.lines[1], `"id":1`) {
		t.Fatalf("wire wrote %q", out.lines)
	}
	if d := out.at[1].Sub(out.at[0]); d < gap {
		t.Errorf("the response followed its request's last notification after %v, want at least %v", d, gap)
	}
}

// waitNoteWritten waits until a notification of request id (its wire key) was written.
func waitNoteWritten(t *testing.T, w *wire, id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		w.mu.Lock()
		r := w.requests[id]
		done := r != nil && !r.lastNote.IsZero()
		w.mu.Unlock()
		if done {
			return
		}
	}
	t.Fatalf("no notification of request %s was written", id)
}

// gateWriter holds its first Write until release is closed, and records each line with whether
// the test had seen the server finish reading the cancel when the write began.
type gateWriter struct {
	entered, release chan struct{}
	cancelRead       *atomic.Bool
	mu               sync.Mutex
	lines            []string
	afterCancel      []bool
}

func (g *gateWriter) Write(p []byte) (int, error) {
	after := g.cancelRead.Load()
	g.mu.Lock()
	first := len(g.lines) == 0
	g.lines = append(g.lines, string(p))
	g.afterCancel = append(g.afterCancel, after)
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.release
	}
	return len(p), nil
}

// TestWireNoProgressAfterCancelRead: notifications of a request that were queued behind a slow
// write when its cancel arrived are not written: no notification for the request starts to be
// written after the server read the cancel (observe returned), the rule after a result too.
func TestWireNoProgressAfterCancelRead(t *testing.T) {
	var cancelRead atomic.Bool
	g := &gateWriter{entered: make(chan struct{}), release: make(chan struct{}), cancelRead: &cancelRead}
	w := newWire(g, slog.New(slog.NewTextHandler(io.Discard, nil)), func() bool { return false }, 0)
	w.observe([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"a"}}}` + "\n"))
	if !w.progress("a", 1, "one") {
		t.Fatal("progress for a request in flight was not queued")
	}
	<-g.entered // the writer is stuck in the client's pipe with "one"
	for n := 2; n <= 5; n++ {
		if !w.progress("a", n, "queued") {
			t.Fatalf("progress %d was not queued", n)
		}
	}
	observed := make(chan struct{})
	go func() {
		w.observe([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n"))
		cancelRead.Store(true)
		close(observed)
	}()
	// The server may wait for the write in progress before it takes the cancel; give it the
	// chance to finish reading first either way.
	select {
	case <-observed:
	case <-time.After(200 * time.Millisecond):
	}
	close(g.release)
	<-observed
	w.close()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.lines) == 0 || !strings.Contains(g.lines[0], `"one"`) {
		t.Fatalf("the first notification was not written: %q", g.lines)
	}
	for i, l := range g.lines {
		if g.afterCancel[i] {
			t.Errorf("written after the server read the cancel: %s", strings.TrimSpace(l))
		}
	}
}
