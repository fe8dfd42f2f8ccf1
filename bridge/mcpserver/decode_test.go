package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

type oneSession struct{}

func (oneSession) List(now time.Time) ([]sessions.Record, []string) {
	return []sessions.Record{{ID: "1796278600502_lmK-X_cli", Tool: "ask_cline", Isolation: "host", Cwd: "/w", Dir: "/d",
		Commit: "c", Provider: "p", Model: "m", DataDir: "/data", Created: now, LastUsed: now, Turns: 2, Title: "t"}}, []string{"w"}
}

// callTool sends args to a handler as a client would and returns the answer and its structuredContent
// as JSON.
func callTool(t *testing.T, h server.ToolHandlerFunc, args any) (*mcp.CallToolResult, any) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Arguments = args
	res, err := h(context.Background(), req)
	if err != nil || res == nil {
		t.Fatalf("%v: protocol error %v", args, err)
	}
	var sc any
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &sc); err != nil {
			t.Fatal(err)
		}
	}
	return res, sc
}

// TestJobAndSessionsArguments: cline_job's and cline_sessions' arguments are decoded like the run
// tools' — strictly, by the schema they advertise — and what their handlers answer satisfies the
// advertised outputSchema and the closed schema of the output struct (no key it lacks).
func TestJobAndSessionsArguments(t *testing.T) {
	js := &jobs.Store{Dir: t.TempDir()}
	b, err := store(run.AskCline, run.Result{OK: true, Text: strings.Repeat("x", 25)})
	if err != nil {
		t.Fatal(err)
	}
	j, err := js.Save(string(run.AskCline), b, true)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Runner: &countingRunner{}, Jobs: js, Sessions: oneSession{}, ResultMaxChars: 10})
	id := j.ID
	cases := []struct {
		tool run.Tool
		args map[string]any
		want string // "" accepted, else a part of the message
	}{
		{jobTool, map[string]any{"jobId": id}, ""},
		{jobTool, map[string]any{"jobId": id, "action": "result", "page": 3.0}, ""},
		{jobTool, map[string]any{"jobId": id, "action": "status", "cursor": 0.0}, ""},
		{jobTool, map[string]any{"jobId": id, "page": 0.0}, "page must be a positive integer (got 0)"},
		{jobTool, map[string]any{"jobId": id, "page": 1.5}, "page must be a positive integer"},
		{jobTool, map[string]any{"jobId": id, "cursor": -1.0}, "cursor must be a non-negative integer (got -1)"},
		{jobTool, map[string]any{"jobId": id, "cursor": "1"}, "cursor must be a non-negative integer"},
		{jobTool, map[string]any{"jobId": id, "action": "stop"}, "action must be one of status, result, cancel"},
		{jobTool, map[string]any{"jobId": id, "action": nil}, "action must be one of"},
		{jobTool, map[string]any{"jobId": id, "jobid": id}, `unknown argument "jobid" for cline_job (accepted: jobId, action, cursor, page, permissionId, allow, message)`},
		{jobTool, map[string]any{"jobId": 7.0}, "jobId must be a string"},
		{jobTool, map[string]any{"jobId": id, "__proto__": map[string]any{}}, "arguments.__proto__: reserved property name"},
		{sessionsTool, map[string]any{}, ""},
		{sessionsTool, map[string]any{"tool": "ask_cline"}, ""},
		{sessionsTool, map[string]any{"tool": 1.0}, "tool must be a string (got 1)"},
		{sessionsTool, map[string]any{"tools": "ask_cline"}, `unknown argument "tools" for cline_sessions (accepted: tool)`},
	}
	for tool, sc := range schemas {
		if sc.in.AdditionalProperties == nil || sc.in.AdditionalProperties.Not == nil {
			t.Errorf("%s: inputSchema must say additionalProperties:false", tool)
		}
	}
	handlers := map[run.Tool]server.ToolHandlerFunc{jobTool: s.jobHandler(), sessionsTool: s.sessionsHandler()}
	closedJob, err := forTool[jobOutput](jobTool)
	if err != nil {
		t.Fatal(err)
	}
	closedSessions, err := forTool[sessionsOutput](sessionsTool)
	if err != nil {
		t.Fatal(err)
	}
	closed := map[run.Tool]json.RawMessage{jobTool: mustJSON(closedJob), sessionsTool: mustJSON(closedSessions)}
	for _, c := range cases {
		res, sc := callTool(t, handlers[c.tool], c.args)
		text := resultText(res)
		if c.want != "" {
			if !res.IsError || !strings.Contains(text, "invalid arguments: "+c.want) {
				t.Errorf("%s %v: got %q, want a rejection saying %q", c.tool, c.args, text, c.want)
			}
		} else {
			if res.IsError {
				t.Errorf("%s %v: rejected: %s", c.tool, c.args, text)
			}
			for name, schema := range map[string]json.RawMessage{"outputSchema": outputSchema(c.tool), "closed output struct": closed[c.tool]} {
				if err := schemaAccepts(t, compile(t, schema), sc); err != nil {
					t.Errorf("%s %v: %s rejects the answer %v: %v", c.tool, c.args, name, sc, err)
				}
			}
		}
		// What a client's schema validation decides, the decoder decides (a job id's validity
		// is the handler's to judge).
		serr := schemaAccepts(t, compile(t, inputSchema(c.tool)), c.args)
		var derr error
		if c.tool == jobTool {
			_, derr = decode(c.tool, any(c.args), &jobArguments{})
		} else {
			_, derr = decode(c.tool, any(c.args), &sessionsArguments{})
		}
		if (serr == nil) != (derr == nil) {
			t.Errorf("%s %v: schema says %v, decoder says %v", c.tool, c.args, serr, derr)
		}
	}
	// A limit of 10 is less than a page answer's own fields: each page carries one character.
	if _, sc := callTool(t, handlers[jobTool], map[string]any{"jobId": id, "action": "result", "page": 3.0}); sc.(map[string]any)["content"] != "x" || sc.(map[string]any)["pages"] != 25.0 {
		t.Errorf("page 3: %v", sc)
	}
}

// TestDecodeStrict: integers are whole numbers that fit the field, defaults come from the schema,
// and a background call without timeoutSeconds gets the job's limit.
func TestDecodeStrict(t *testing.T) {
	cwd := t.TempDir()
	v := testValidator("linux", sandbox.IsolationHost)
	for _, bad := range []map[string]any{
		{"prompt": "hi there", "cwd": cwd, "maxIterations": 3e9},
		{"prompt": "hi there", "cwd": cwd, "timeoutSeconds": 1e300},
		{"prompt": "hi there", "cwd": cwd, "maxCostUsd": true},
		{"prompt": "hi there", "cwd": cwd, "protocol": ""},
	} {
		if _, err := v.call(run.AskCline, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	v.jobSeconds = 3600
	r, err := v.request(run.AskCline, map[string]any{"prompt": "hi there", "cwd": cwd, "background": true, "maxIterations": 7.0})
	if err != nil || !r.background || r.call.TimeoutSeconds != 3600 || r.call.MaxIterations != 7 || r.call.Thinking != "none" {
		t.Errorf("background call: %+v, %v", r, err)
	}
	r, err = v.request(run.AskCline, map[string]any{"prompt": "hi there", "cwd": cwd, "background": true, "timeoutSeconds": 20.0})
	if err != nil || r.call.TimeoutSeconds != 20 {
		t.Errorf("background call with timeoutSeconds: %+v, %v", r, err)
	}
}
