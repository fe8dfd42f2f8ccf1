package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// ACP mode (`fake-cline --acp`): NDJSON JSON-RPC 2.0 on stdin/stdout replaying what the real CLI
// 3.0.65 was observed to do (docs/acp.md, re-checked by the contract suite's TestACP*
// tests): the initialize answer, sessions stored under the data dir and loadable by a later
// process, a permission request before every tool call, reject/cancel semantics, the abort after
// five rejected calls in a row, provider failures as JSON-RPC errors. Scenarios are selected per
// prompt like --json runs: a `fake:<name>?k=v` directive in the prompt text, else
// $FAKE_CLINE_SCENARIO, else pong (see acp_scenarios.go).

// rpcMsg is any incoming JSON-RPC message.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// rpcErr is a JSON-RPC error answer.
type rpcErr struct {
	code int
	msg  string
	data any
}

// acpAgent is one `cline --acp` process.
type acpAgent struct {
	out, errOut *stream
	paths       paths
	provider    string
	key         string

	mu       sync.Mutex
	sessions map[string]*acpSession
	nextID   int
	waiting  map[string]chan json.RawMessage
	inflight sync.WaitGroup
}

// acpMain serves ACP until stdin ends. Like the real CLI it ignores -P/-m/-k/-c/--data-dir
// (docs/acp.md §10): the provider comes from CLINE_PROVIDER (default cline), the key from CLINE_API_KEY.
func acpMain(cfg *config, out, errOut *stream) int {
	cfg.dataDir, cfg.cwd = "", ""
	procCwd, _ := os.Getwd()
	a := &acpAgent{out: out, errOut: errOut, paths: resolvePaths(cfg, os.Getenv, procCwd),
		provider: os.Getenv("CLINE_PROVIDER"), key: os.Getenv("CLINE_API_KEY"),
		sessions: map[string]*acpSession{}, waiting: map[string]chan json.RawMessage{}}
	if a.provider == "" {
		a.provider = "cline"
	}
	writeRecord(recordInfo{args: os.Args[1:], stdin: stdinKind(), started: time.Now(), paths: &a.paths, scenario: "acp", provider: a.provider})
	errOut.text("[acp] starting ACP mode over stdio…\n")
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var m rpcMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		a.dispatch(m)
	}
	// Stdin ended: like the real CLI, exit about a second later without answering what runs
	// (the manifest of a running prompt stays "running"); eof_ms= shortens it for tests.
	time.Sleep(time.Duration(envInt("FAKE_CLINE_ACP_EOF_MS", 300)) * time.Millisecond)
	if os.Getenv("FAKE_CLINE_ACP_IGNORE_EOF") == "1" {
		select {}
	}
	return 0
}

func (a *acpAgent) dispatch(m rpcMsg) {
	switch {
	case m.Method == "" && len(m.ID) > 0: // an answer to one of our requests
		a.mu.Lock()
		ch := a.waiting[string(m.ID)]
		delete(a.waiting, string(m.ID))
		a.mu.Unlock()
		if ch != nil {
			ch <- append(json.RawMessage(nil), m.Result...)
		}
	case m.Method == "session/cancel":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if s := a.session(p.SessionID); s != nil {
			s.cancel()
		}
	case len(m.ID) == 0:
		// other notifications are ignored
	case m.Method == "session/prompt":
		go a.answer(m.ID, m.Method, func() (any, *rpcErr) { return a.prompt(m.Params) })
	default:
		a.answer(m.ID, m.Method, func() (any, *rpcErr) { return a.handle(m.Method, m.Params) })
	}
}

// answer runs h and writes its result or error for request id.
func (a *acpAgent) answer(id json.RawMessage, method string, h func() (any, *rpcErr)) {
	res, e := h()
	if e != nil {
		eo := obj{{"code", e.code}, {"message", e.msg}}
		if e.data != nil {
			eo = append(eo, kv{"data", e.data})
		}
		a.send(obj{{"jsonrpc", "2.0"}, {"id", rawJSON(id)}, {"error", eo}})
		a.errOut.text("Error handling request " + string(appendJSON(nil, obj{{"method", method}, {"error", eo}})) + "\n")
		return
	}
	if res == nil {
		res = obj{}
	}
	a.send(obj{{"jsonrpc", "2.0"}, {"id", rawJSON(id)}, {"result", res}})
}

func (a *acpAgent) send(o obj) {
	a.out.raw(append(appendJSON(nil, o), '\n'))
}

// notify sends a session/update.
func (a *acpAgent) notify(sessionID string, update obj) {
	a.send(obj{{"jsonrpc", "2.0"}, {"method", "session/update"}, {"params", obj{{"sessionId", sessionID}, {"update", update}}}})
}

// request sends a request to the client (ids from 0, like the real CLI) and waits for the
// answer, or for stdin to end (nil).
func (a *acpAgent) request(method string, params obj) json.RawMessage {
	a.mu.Lock()
	id := strconv.Itoa(a.nextID)
	a.nextID++
	ch := make(chan json.RawMessage, 1)
	a.waiting[id] = ch
	a.mu.Unlock()
	a.send(obj{{"jsonrpc", "2.0"}, {"id", a.nextIDValue(id)}, {"method", method}, {"params", params}})
	return <-ch
}

func (a *acpAgent) nextIDValue(id string) any { n, _ := strconv.Atoi(id); return n }

func (a *acpAgent) session(id string) *acpSession {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

func (a *acpAgent) handle(method string, params json.RawMessage) (any, *rpcErr) {
	switch method {
	case "initialize":
		return rawJSON(initializeResult), nil
	case "authenticate":
		var p struct {
			MethodID string `json:"methodId"`
		}
		_ = json.Unmarshal(params, &p)
		if p.MethodID == "cline" || p.MethodID == "cline-pass" || p.MethodID == "openai-codex" {
			return nil, &rpcErr{code: -32603, msg: "Internal error: fake-cline cannot sign in (no network)"}
		}
		return nil, &rpcErr{code: -32602, msg: "Invalid params: Unsupported auth method: " + p.MethodID}
	case "session/new":
		return a.newSession(params)
	case "session/load":
		return a.loadSession(params)
	case "session/set_config_option", "session/set_model", "session/set_mode":
		return a.configure(method, params)
	}
	return nil, &rpcErr{code: -32601, msg: fmt.Sprintf("%q: %s", "Method not found", method)}
}

// initializeResult is the real CLI's answer (docs/acp.md §2).
const initializeResult = `{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"audio":false,"embeddedContext":false}},"agentInfo":{"name":"cline","version":"3.0.65"},"authMethods":[{"id":"cline","name":"Sign in with Cline"},{"id":"cline-pass","name":"Sign in with ClinePass"},{"id":"openai-codex","name":"Sign in with ChatGPT Subscription"}]}`
