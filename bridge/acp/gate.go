package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// Limits of the inbound stream.
const (
	// maxLine: a longer line from the agent is skipped unread (the SDK would drop the whole
	// connection at 10 MiB). Cline writes one message per line; only a huge tool output comes
	// near it.
	maxLine = 8 << 20
	// maxInFlight session/update notifications may wait in the SDK's queue, which holds 1024 and
	// drops the whole connection when it overflows.
	maxInFlight = 512
)

// gate sits between the agent's stdout and the SDK. It hands the SDK one line at a time and
// applies flow control: a session/update is released only while fewer than maxInFlight wait to
// be handled, so a fast stream (a long answer in 12-byte chunks) on a loaded machine slows the
// reading instead of overflowing the SDK's queue. It drops what the engine never uses and the
// SDK would only log: blank and non-JSON lines, lines over maxLine, notifications other than a
// valid session/update. Every session/update it lets through reaches handler.SessionUpdate,
// which calls release, so the count is exact.
type gate struct {
	src *bufio.Reader

	mu       sync.Mutex
	cond     *sync.Cond
	inFlight int
	closed   bool

	pending []byte // the rest of the line being handed over (reader-owned)
}

func newGate(r io.Reader) *gate {
	g := &gate{src: bufio.NewReaderSize(r, 64<<10)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Read implements io.Reader for the SDK's scanner.
func (g *gate) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		line, err := g.line()
		if len(line) > 0 && g.admit(line) {
			g.pending = append(line, '\n')
			break
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// line reads the next line without its newline; a line over maxLine comes back empty.
func (g *gate) line() ([]byte, error) {
	var buf []byte
	over := false
	for {
		frag, err := g.src.ReadSlice('\n')
		if !over {
			if len(buf)+len(frag) > maxLine+1 {
				over, buf = true, nil
			} else {
				buf = append(buf, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if over {
			return nil, err
		}
		return bytes.TrimRight(buf, "\r\n"), err
	}
}

// admit decides whether a line goes to the SDK, and waits for room for a session/update.
func (g *gate) admit(line []byte) bool {
	// The SDK's own message shape, so a line this parse accepts is one the SDK accepts, and
	// "id":null counts as no id, as it does there.
	var m struct {
		JSONRPC string            `json:"jsonrpc"`
		ID      *json.RawMessage  `json:"id,omitempty"`
		Method  string            `json:"method,omitempty"`
		Params  json.RawMessage   `json:"params,omitempty"`
		Result  json.RawMessage   `json:"result,omitempty"`
		Error   *sdk.RequestError `json:"error,omitempty"`
	}
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	if m.Method == "" || m.ID != nil {
		return true // responses and requests: the SDK answers or matches them
	}
	if m.Method != sdk.ClientMethodSessionUpdate {
		return false
	}
	var n sdk.SessionNotification
	if json.Unmarshal(m.Params, &n) != nil || n.Validate() != nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.inFlight >= maxInFlight && !g.closed {
		g.cond.Wait()
	}
	g.inFlight++
	return true
}

// release is called once per session/update the handler received.
func (g *gate) release() {
	g.mu.Lock()
	if g.inFlight > 0 {
		g.inFlight--
	}
	g.mu.Unlock()
	g.cond.Signal()
}

// shut releases a waiting reader for good (the connection ended).
func (g *gate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cond.Broadcast()
}
