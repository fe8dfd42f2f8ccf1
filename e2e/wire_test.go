package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// rawServer is the built server driven over its own stdin and stdout without an MCP client
// library, so a test sees every line exactly where the server wrote it (a client library may
// dispatch notifications and responses on different goroutines and hide a wrong order).
type rawServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	exited chan struct{}

	mu     sync.Mutex
	lines  []rawLine
	stderr bytes.Buffer
	grew   chan struct{} // a token whenever lines or stderr grew
}

// rawLine is one line the server wrote, decoded just enough to place it.
type rawLine struct {
	raw    string
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProgressToken any    `json:"progressToken"`
		Message       string `json:"message"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

// response reports whether the line answers a request (it has an id and no method).
func (l rawLine) response() bool { return len(l.ID) > 0 && l.Method == "" }

// serverCmd is the built server over this env, not yet started, with pipes to its stdin and
// from its stdout.
func (e *env) serverCmd(args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	e.t.Helper()
	argv, environ := e.server(nil, args...)
	cmd := exec.Command(bins.ClineMCP, argv...)
	cmd.Env, cmd.Dir = environ, e.work
	in, err := cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	return cmd, in, out
}

func (e *env) startRaw(args ...string) *rawServer {
	t := e.t
	cmd, in, out := e.serverCmd(args...)
	s := &rawServer{t: t, cmd: cmd, in: in, exited: make(chan struct{}), grew: make(chan struct{}, 1)}
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		s.mu.Lock()
		s.stderr.Write(p)
		s.mu.Unlock()
		s.signal()
		return len(p), nil
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				var l rawLine
				if jerr := json.Unmarshal([]byte(line), &l); jerr != nil || !strings.HasSuffix(line, "\n") {
					t.Errorf("the server wrote a line that is not JSON-RPC: %.300q", line)
				}
				l.raw = line
				s.mu.Lock()
				s.lines = append(s.lines, l)
				s.mu.Unlock()
				s.signal()
			}
			if err != nil {
				break
			}
		}
		_ = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = in.Close()
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-s.exited
			t.Errorf("the server did not exit within 30 s of stdin closing")
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.logs())
		}
	})
	s.send(map[string]any{"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw-wire-test", "version": "1"}}})
	s.waitFor(20*time.Second, "the initialize response", func(ls []rawLine) bool { return s.answered(ls, `"init"`) })
	s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return s
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (s *rawServer) signal() {
	select {
	case s.grew <- struct{}{}:
	default:
	}
}

// send writes one JSON-RPC message as one line.
func (s *rawServer) send(v any) {
	s.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("write to the server: %v", err)
	}
}

// call sends tools/call with the given id and progress token (nil: none).
func (s *rawServer) call(id any, tool string, args map[string]any, token any) {
	params := map[string]any{"name": tool, "arguments": args}
	if token != nil {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

func (s *rawServer) snapshot() []rawLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]rawLine(nil), s.lines...)
}

func (s *rawServer) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// answered reports whether a response with this id (compact JSON) is among ls.
func (s *rawServer) answered(ls []rawLine, id string) bool {
	for _, l := range ls {
		if l.response() && string(l.ID) == id {
			return true
		}
	}
	return false
}

// waitFor waits until cond holds for the lines so far, re-checking whenever output grows.
func (s *rawServer) waitFor(d time.Duration, what string, cond func([]rawLine) bool) {
	s.t.Helper()
	deadline := time.After(d)
	for !cond(s.snapshot()) {
		select {
		case <-s.grew:
		case <-s.exited:
			if !cond(s.snapshot()) {
				s.t.Fatalf("the server exited before %s", what)
			}
			return
		case <-deadline:
			s.t.Fatalf("no %s within %v", what, d)
		}
	}
}

// waitLog waits until the server's log contains every one of subs.
func (s *rawServer) waitLog(d time.Duration, subs ...string) {
	s.t.Helper()
	has := func() bool {
		l := s.logs()
		for _, sub := range subs {
			if !strings.Contains(l, sub) {
				return false
			}
		}
		return true
	}
	deadline := time.After(d)
	for !has() {
		select {
		case <-s.grew:
		case <-deadline:
			s.t.Fatalf("the server log does not contain %q within %v", subs, d)
		}
	}
}

// TestNoProgressAfterItsResponse makes the race between a call's last progress message and its
// result as likely as it gets — many calls at once, each streaming an event every 40 ms, so a
// notification goes out right before the run ends — and checks on the raw wire that no
// notifications/progress ever follows the response of its request. (mcp-go alone wrote the last
// message after the result in about 50 of 60 calls.) The pause before a response is
// TestWireGapAfterLastNotification's.
func TestNoProgressAfterItsResponse(t *testing.T) {
	e := prepareEnv(t)
	s := e.startRaw()
	const rounds, perRound = 3, 20
	token := map[string]string{} // response id → its progress token
	for r := 0; r < rounds; r++ {
		var ids []string
		for i := 0; i < perRound; i++ {
			n := r*perRound + i
			tok := fmt.Sprintf("tok-%d", n)
			s.call(n, "ask_cline", map[string]any{"prompt": "go fake:slow?seconds=1&interval_ms=40", "cwd": e.work}, tok)
			token[fmt.Sprint(n)] = tok
			ids = append(ids, fmt.Sprint(n))
		}
		s.waitFor(2*time.Minute, "responses to every call", func(ls []rawLine) bool {
			for _, id := range ids {
				if !s.answered(ls, id) {
					return false
				}
			}
			return true
		})
	}

	answered := map[string]bool{} // token → its response was written
	lastMsg := map[string]string{}
	progressCount := 0
	for i, l := range s.snapshot() {
		switch {
		case l.Method == "notifications/progress":
			tok, _ := l.Params.ProgressToken.(string)
			progressCount++
			if answered[tok] {
				t.Errorf("line %d: progress %q for %s after the response to its request", i, l.Params.Message, tok)
			}
			lastMsg[tok] = l.Params.Message
		case l.response():
			if tok, ok := token[string(l.ID)]; ok {
				answered[tok] = true
				if strings.Contains(string(l.Result), `"isError":true`) {
					t.Errorf("call %s failed: %.400s", l.ID, l.raw)
				}
			}
		}
	}
	for id, tok := range token {
		if !answered[tok] {
			t.Errorf("call %s: no response", id)
		}
		if lastMsg[tok] == "" {
			t.Errorf("call %s: no progress at all; the test would prove nothing", id)
		}
	}
	t.Logf("%d calls, %d progress notifications, all before their responses", len(token), progressCount)
}

// TestCancelledRequestIsNotAnswered: after notifications/cancelled the run is stopped and cleaned
// up, the server's log records the outcome, and the request gets no response (MCP: the receiver
// SHOULD NOT respond); the session goes on serving.
func TestCancelledRequestIsNotAnswered(t *testing.T) {
	e := prepareEnv(t)
	e.hooks = []string{"CLINE_MCP_TEST_PROGRESS_HEARTBEAT=1s"}
	s := e.startRaw()
	s.call(7, "ask_cline", map[string]any{"prompt": "go fake:hang", "cwd": e.work}, "tok-7")
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(e.records()) == 1 }) {
		t.Fatal("the CLI never started")
	}
	pid := e.records()[0].PID
	s.waitFor(10*time.Second, "a progress notification", func(ls []rawLine) bool {
		for _, l := range ls {
			if l.Method == "notifications/progress" {
				return true
			}
		}
		return false
	})
	s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 7, "reason": "user pressed Esc"}})
	if !mcpsession.Eventually(5*time.Second, func() bool { return !alive(pid) }) {
		t.Fatalf("the CLI (pid %d) is still alive after notifications/cancelled", pid)
	}
	s.waitLog(10*time.Second, "kind=cancelled", "response withheld")
	s.send(map[string]any{"jsonrpc": "2.0", "id": 8, "method": "ping"})
	s.waitFor(10*time.Second, "the ping response", func(ls []rawLine) bool { return s.answered(ls, "8") })
	for i, l := range s.snapshot() {
		if l.response() && string(l.ID) == "7" {
			t.Errorf("line %d: the cancelled request was answered: %.300s", i, l.raw)
		}
	}
	if !strings.Contains(s.logs(), "reason=\"user pressed Esc\"") {
		t.Errorf("the log does not record the client's reason:\n%s", s.logs())
	}
}

// TestStdinClosedAnswersCancelled: a client that closes stdin (the MCP way to end a stdio session)
// while a call runs gets that call answered with kind cancelled before the server exits, and the
// run is stopped.
func TestStdinClosedAnswersCancelled(t *testing.T) {
	e := prepareEnv(t)
	s := e.startRaw()
	s.call(3, "ask_cline", map[string]any{"prompt": "go fake:hang", "cwd": e.work}, "tok-3")
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(e.records()) == 1 }) {
		t.Fatal("the CLI never started")
	}
	pid := e.records()[0].PID
	if err := s.in.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not exit within 20 s of stdin closing")
	}
	var answer string
	for _, l := range s.snapshot() {
		if l.response() && string(l.ID) == "3" {
			answer = l.raw
		}
	}
	if !strings.Contains(answer, `"isError":true`) || !strings.Contains(answer, `"kind":"cancelled"`) {
		t.Errorf("want call 3 answered with isError and kind cancelled, got %.400q", answer)
	}
	if alive(pid) {
		t.Errorf("the CLI (pid %d) outlived the server", pid)
	}
}

// TestClientGoneStopsCleanly: a client that dies closes the server's stdin and stdout at once.
// The server cancels its calls, finishes every cleanup and exits 0: a write to the closed stdout
// fails (logged) instead of killing the server with SIGPIPE between two calls' cleanups.
func TestClientGoneStopsCleanly(t *testing.T) {
	e := prepareEnv(t)
	cmd, in, out := e.serverCmd()
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}})
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	for i := 1; i <= 2; i++ {
		send(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": map[string]any{
			"name": "ask_cline", "arguments": map[string]any{"prompt": "go fake:hang", "cwd": e.work}, "_meta": map[string]any{"progressToken": i}}})
	}
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(e.records()) == 2 }) {
		t.Fatal("the two runs never started")
	}
	out.Close() // the client's end of our stdout is gone…
	in.Close()  // …and so is our stdin
	if err := cmd.Wait(); err != nil {
		t.Errorf("server exit: %v, want 0\n%s", err, logs.String())
	}
	if n := strings.Count(logs.String(), `msg="call finished"`); n != 2 {
		t.Errorf("%d of 2 calls finished their cleanup before the server exited\n%s", n, logs.String())
	}
	for _, r := range e.records() {
		if alive(r.PID) {
			t.Errorf("the CLI (pid %d) outlived the server", r.PID)
		}
	}
}
