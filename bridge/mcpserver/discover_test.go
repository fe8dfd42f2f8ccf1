package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
)

// okRunner answers every call with a fixed answer.
type okRunner struct{}

func (okRunner) Do(context.Context, run.Call, run.Progress) run.Result {
	return run.Result{OK: true, Text: "pong", Attempts: 1}
}

type noSessions struct{}

func (noSessions) List(time.Time) ([]sessions.Record, []string) { return nil, nil }

// stdio is a server served over pipes, as a client's child process would be.
type stdio struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func serveStdio(t *testing.T) *stdio {
	t.Helper()
	srv := New(Options{Runner: okRunner{}, Version: "1.2.3", Sessions: noSessions{},
		Jobs: &jobs.Store{Dir: t.TempDir(), Owner: "test"}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), inR, outW); _ = outW.Close() }()
	t.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return &stdio{t: t, in: inW, out: sc}
}

// call sends one request and returns the response, which must be the next line.
func (s *stdio) call(id int, method string, params map[string]any) map[string]any {
	s.t.Helper()
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, _ := json.Marshal(req)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
	if !s.out.Scan() {
		s.t.Fatalf("no answer to %s: %v", method, s.out.Err())
	}
	var resp map[string]any
	if err := json.Unmarshal(s.out.Bytes(), &resp); err != nil {
		s.t.Fatalf("%s: not JSON: %s", method, s.out.Bytes())
	}
	if fmt.Sprint(resp["id"]) != fmt.Sprint(id) || resp["jsonrpc"] != "2.0" {
		s.t.Fatalf("%s: answer %s does not answer id %d", method, s.out.Bytes(), id)
	}
	return resp
}

// modern is the _meta every request of protocol 2026-07-28 carries.
func modern(version string) map[string]any {
	return map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    version,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}}
}

// TestDiscoverHandshake: the server speaks both eras on stdio, as Claude Code 2.1.328 probes it
// (server/discover first, with 2026-07-28 in _meta, then stateless requests) and as older clients
// open it (initialize). mcp-go answers server/discover and the per-request _meta; this pins what
// a client relies on, and that unknown methods stay JSON-RPC errors.
func TestDiscoverHandshake(t *testing.T) {
	s := serveStdio(t)
	d := s.call(1, "server/discover", modern("2026-07-28"))
	res, _ := d["result"].(map[string]any)
	if res == nil {
		t.Fatalf("server/discover: %v", d)
	}
	if !strings.Contains(fmt.Sprint(res["supportedVersions"]), "2026-07-28") || !strings.Contains(fmt.Sprint(res["supportedVersions"]), "2025-11-25") {
		t.Errorf("supportedVersions %v, want 2026-07-28 and 2025-11-25 (initialize)", res["supportedVersions"])
	}
	if res["resultType"] != "complete" || res["capabilities"].(map[string]any)["tools"] == nil {
		t.Errorf("server/discover result %v, want resultType complete and the tools capability", res)
	}
	if info := fmt.Sprint(res["_meta"]); !strings.Contains(info, "cline-mcp") || !strings.Contains(info, "1.2.3") {
		t.Errorf("server/discover _meta %s, want serverInfo", info)
	}
	ins, _ := res["instructions"].(string)
	for _, tool := range []string{"ask_cline", "apply_cline_edits", "ask_cline_workspace", "review_cline", "cline_job", "cline_sessions"} {
		if !strings.Contains(ins, "- "+tool+": ") {
			t.Errorf("the instructions do not describe %s:\n%s", tool, ins)
		}
	}
	if n := strings.Count(ins, "\n") + 1; n > 8 {
		t.Errorf("the instructions take %d lines, want a few", n)
	}

	// stateless tools/list: cacheable, and every tool has its search hint
	l := s.call(2, "tools/list", modern("2026-07-28"))["result"].(map[string]any)
	if l["resultType"] != "complete" || l["ttlMs"] == nil || l["cacheScope"] == nil {
		t.Errorf("tools/list result lacks resultType, ttlMs or cacheScope: %v", l["resultType"])
	}
	tools, _ := l["tools"].([]any)
	if len(tools) != 6 {
		t.Errorf("tools/list has %d tools, want 6", len(tools))
	}
	for _, x := range tools {
		tl := x.(map[string]any)
		meta, _ := tl["_meta"].(map[string]any)
		if h, _ := meta[searchHintKey].(string); h == "" || h != searchHints[run.Tool(tl["name"].(string))] {
			t.Errorf("%s: _meta %v, want its search hint", tl["name"], meta)
		}
	}
	c := s.call(3, "tools/call", map[string]any{"name": "ask_cline", "arguments": map[string]any{"prompt": "hi"},
		"_meta": modern("2026-07-28")["_meta"]})
	if r, _ := c["result"].(map[string]any); r == nil || r["resultType"] != "complete" || r["isError"] == true {
		t.Errorf("a stateless tools/call answered %v", c)
	}

	// errors stay JSON-RPC errors with the request's id
	for i, e := range []struct {
		method string
		params map[string]any
		code   float64
	}{
		{"bogus/method", modern("2026-07-28"), -32601},
		{"bogus/method", nil, -32601},
		{"tools/list", modern("2099-01-01"), -32022}, // UnsupportedProtocolVersionError, with the supported list
		{"server/discover", nil, -32601},             // a legacy probe without _meta: a client falls back
	} {
		r := s.call(10+i, e.method, e.params)
		errObj, _ := r["error"].(map[string]any)
		if errObj == nil || errObj["code"] != e.code {
			t.Errorf("%s %v: answered %.300v, want error %v", e.method, e.params, r, e.code)
		}
	}

	// a notification of an unknown method gets no answer: the next line answers the next request
	if _, err := s.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/bogus","params":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if r := s.call(15, "tools/list", modern("2026-07-28")); r["result"] == nil {
		t.Errorf("tools/list after an unknown notification answered %.300v", r)
	}
	// a stateless request without the client's capabilities is invalid
	noCaps := map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
	if r := s.call(16, "tools/list", noCaps); r["error"] == nil || r["error"].(map[string]any)["code"] != float64(-32602) {
		t.Errorf("tools/list without clientCapabilities answered %.300v, want -32602", r)
	}

	// the legacy handshake on the same process
	in := s.call(20, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "old", "version": "1"}})
	if r, _ := in["result"].(map[string]any); r == nil || r["protocolVersion"] != "2025-11-25" || !strings.Contains(fmt.Sprint(r["instructions"]), "cline_job") {
		t.Errorf("initialize answered %v", in)
	}
}
