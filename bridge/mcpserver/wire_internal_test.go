package mcpserver

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
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
