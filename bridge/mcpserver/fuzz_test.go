package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// countingRunner stands in for the runner: it only counts calls.
type countingRunner struct{ calls atomic.Int64 }

func (r *countingRunner) Do(context.Context, run.Call, run.Progress) run.Result {
	r.calls.Add(1)
	return run.Result{OK: true, Text: "ok"}
}

// FuzzToolArguments sends arbitrary JSON as the arguments of each tool through the real handler:
// it never panics; invalid input never reaches the runner (nothing is spawned) and comes back as
// launch_failed naming a rule; valid input reaches it once, with a call that keeps every rule.
func FuzzToolArguments(f *testing.F) {
	dir := f.TempDir()
	for _, s := range []string{
		`{"prompt":"hi there"}`,
		`{"prompt":"x","cwd":"` + dir + `","timeoutSeconds":300,"thinking":"xhigh","provider":"a/b","model":"m@1"}`,
		`{"prompt":"p","__proto__":{}}`, `{"prompt":"p","nested":{"constructor":1}}`,
		`{"prompt":"p","timeoutSeconds":301}`, `{"prompt":"p","timeoutSeconds":1.5}`,
		`{"prompt":"","cwd":"/nonexistent"}`, `[]`, `null`, `"str"`, `{"prompt":"p","isolation":"vm"}`,
		`{"prompt":"-PONG","systemPrompt":"` + strings.Repeat("s", 100) + `"}`,
	} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, raw string, which uint8) {
		var args any
		if json.Unmarshal([]byte(raw), &args) != nil {
			return
		}
		tools := []run.Tool{run.AskCline, run.ApplyClineEdits, run.AskClineWorkspace}
		tool := tools[int(which)%len(tools)]
		r := &countingRunner{}
		s := New(Options{Runner: r, Floor: sandbox.IsolationHost, GOOS: []string{"linux", "windows"}[int(which/3)%2]})
		s.val.wd = func() (string, error) { return dir, nil }
		req := mcp.CallToolRequest{}
		req.Params.Name = string(tool)
		req.Params.Arguments = args
		res, err := s.handler(tool)(context.Background(), req)
		if err != nil || res == nil {
			t.Fatalf("handler returned a protocol error %v for %s", err, raw)
		}
		call, verr := s.val.call(tool, args)
		switch {
		case verr != nil:
			if r.calls.Load() != 0 {
				t.Fatalf("invalid arguments (%v) reached the runner: %s", verr, raw)
			}
			if !res.IsError || !strings.Contains(resultText(res), "launch_failed") {
				t.Fatalf("invalid arguments did not come back as launch_failed: %s", raw)
			}
		default:
			if r.calls.Load() != 1 {
				t.Fatalf("valid arguments reached the runner %d times: %s", r.calls.Load(), raw)
			}
			if call.Prompt == "" || call.TimeoutSeconds < 1 || call.TimeoutSeconds > MaxTimeoutSeconds || !filepath.IsAbs(call.Cwd) {
				t.Fatalf("accepted a call that breaks a rule: %+v from %s", call, raw)
			}
			if st, err := os.Stat(call.Cwd); err != nil || !st.IsDir() {
				t.Fatalf("accepted a cwd that is not a directory: %q", call.Cwd)
			}
			for _, id := range []string{call.Provider, call.Model} {
				if id != "" && !idPattern.MatchString(id) {
					t.Fatalf("accepted provider/model %q", id)
				}
			}
		}
	})
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
