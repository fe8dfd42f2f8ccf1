package acp_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
)

// pipeAgent is an agent the test scripts message by message over io.Pipe: it sees every line the
// engine writes and answers with whatever the test sends, valid or not.
type pipeAgent struct {
	t     *testing.T
	lines chan map[string]any
	out   *io.PipeWriter
	conn  *acp.Conn
	// stalled, once closed, makes the agent stop reading its stdin (after the line in flight).
	stalled chan struct{}
}

func newPipeAgent(t *testing.T, opts acp.Options) *pipeAgent {
	t.Helper()
	cr, cw := io.Pipe() // engine → agent
	ar, aw := io.Pipe() // agent → engine
	a := &pipeAgent{t: t, lines: make(chan map[string]any, 64), out: aw, stalled: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(cr)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			select {
			case <-a.stalled:
				return // stop reading: the engine's writes block from now on
			default:
			}
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			a.lines <- m
		}
		close(a.lines)
	}()
	a.conn = acp.New(cw, ar, opts)
	t.Cleanup(func() { _ = aw.Close(); _ = cr.Close() })
	return a
}

// recv returns the engine's next message (fails after 5 s).
func (a *pipeAgent) recv() map[string]any {
	a.t.Helper()
	select {
	case m, ok := <-a.lines:
		if !ok {
			a.t.Fatal("the engine closed its output")
		}
		return m
	case <-time.After(5 * time.Second):
		a.t.Fatal("no message from the engine within 5 s")
	}
	return nil
}

// expect receives the next message and checks its method ("" for a response).
func (a *pipeAgent) expect(method string) map[string]any {
	a.t.Helper()
	m := a.recv()
	if got, _ := m["method"].(string); got != method {
		a.t.Fatalf("got message %v, want method %q", m, method)
	}
	return m
}

func (a *pipeAgent) send(line string) {
	a.t.Helper()
	if _, err := io.WriteString(a.out, line+"\n"); err != nil {
		a.t.Fatalf("send: %v", err)
	}
}

// reply answers request m with a raw JSON result.
func (a *pipeAgent) reply(m map[string]any, result string) {
	a.send(`{"jsonrpc":"2.0","id":` + idOf(m) + `,"result":` + result + `}`)
}

func idOf(m map[string]any) string {
	b, _ := json.Marshal(m["id"])
	return string(b)
}

// handshake runs initialize and session/new with the given session id.
func (a *pipeAgent) handshake(sessionID string, policy acp.Policy) *acp.Session {
	a.t.Helper()
	type res struct {
		s   *acp.Session
		err error
	}
	done := make(chan res, 1)
	go func() {
		if _, err := a.conn.Initialize(a.t.Context()); err != nil {
			done <- res{nil, err}
			return
		}
		s, err := a.conn.NewSession(a.t.Context(), "/work", policy)
		done <- res{s, err}
	}()
	a.reply(a.expect("initialize"), `{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[]}`)
	a.reply(a.expect("session/new"), `{"sessionId":`+strconv.Quote(sessionID)+`}`)
	r := <-done
	if r.err != nil {
		a.t.Fatalf("handshake: %v", r.err)
	}
	return r.s
}

func update(sessionID, body string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":` + strconv.Quote(sessionID) + `,"update":` + body + `}}`
}

func chunk(text string) string {
	b, _ := json.Marshal(text)
	return `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":` + string(b) + `}}`
}
