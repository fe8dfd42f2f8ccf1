package mcpserver

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestStructuredContentReadsInOrder: the JSON a client hands the model (Claude Code gives it
// structuredContent, not the text) starts with what was asked for and ends with bookkeeping,
// satisfies the tool's outputSchema, and keeps "<" readable.
func TestStructuredContentReadsInOrder(t *testing.T) {
	code, sig := 1, "SIGKILL"
	diff := "diff --git a/x b/x\n+<b>new</b> & \"quoted\"\n"
	base := run.Result{Attempts: 1, ExitCode: &code, Duration: 1.25, Isolation: sandbox.IsolationHost,
		AttemptIsolation: []sandbox.Isolation{sandbox.IsolationHost}}
	ok := base
	ok.OK, ok.Text, ok.Model, ok.Usage = true, "The answer: ünïcødé \"q\"\nline 2", "m", &run.Usage{InputTokens: 3}
	failed := base
	failed.Kind, failed.Message, failed.Signal = "non_zero_exit", "cline exited with code 1", &sig
	failed.StderrTail, failed.StdoutTail = "<html>502</html>", "{}"
	applyOK := ok
	applyOK.Diff, applyOK.ChangedFiles, applyOK.HeadBefore, applyOK.HeadAfter = &diff, []run.ChangedFile{{Path: "x", Status: "M"}}, "abc", "abc"
	commit := failed
	commit.Kind, commit.Message = "commit_created", "Cline created a commit"
	commit.Git = &run.GitReport{HeadBefore: "abc", HeadAfter: "def", UndoHint: "git reset --soft abc"}
	commit.Diff, commit.ChangedFiles, commit.HeadBefore, commit.HeadAfter = &diff, []run.ChangedFile{{Path: "x", Status: "M"}}, "abc", "def"
	wsOK := ok
	wsOK.Worktree = &run.WorktreeReport{Commit: "abc", Removed: true}

	cases := []struct {
		name  string
		tool  run.Tool
		res   run.Result
		order []string // these keys appear in this relative order
		first string   // the keys a reader meets first, comma-separated
	}{
		{"ask ok", run.AskCline, ok, []string{"text", "warnings", "model", "usage", "attempts", "exitCode", "durationMs", "isolation", "attemptIsolation"}, "ok,text"},
		{"ask failed", run.AskCline, failed, []string{"kind", "message", "retryable", "warnings", "attempts", "exitCode", "signal", "elapsedSeconds", "isolation", "attemptIsolation", "stderrTail", "stdoutTail"}, "ok,kind,message,retryable"},
		{"apply ok", run.ApplyClineEdits, applyOK, []string{"text", "changedFiles", "diff", "diffTruncated", "warnings", "headBefore", "headAfter", "attempts", "durationMs"}, "ok,text,changedFiles,diff"},
		{"apply commit_created", run.ApplyClineEdits, commit, []string{"kind", "message", "git", "changedFiles", "diff", "warnings", "headBefore", "attempts", "stderrTail"}, "ok,kind,message,retryable,git"},
		{"workspace ok", run.AskClineWorkspace, wsOK, []string{"text", "warnings", "worktree", "attempts"}, "ok,text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := toolResult(c.tool, c.res)
			wire, err := json.Marshal(res) // what mcp-go puts on the wire
			if err != nil {
				t.Fatal(err)
			}
			var env struct {
				StructuredContent json.RawMessage `json:"structuredContent"`
			}
			if err := json.Unmarshal(wire, &env); err != nil {
				t.Fatal(err)
			}
			keys := objectKeys(t, env.StructuredContent)
			if got := strings.Join(keys[:strings.Count(c.first, ",")+1], ","); got != c.first {
				t.Errorf("got keys starting %s, want %s (all: %v)", got, c.first, keys)
			}
			last := -1
			for _, k := range c.order {
				i := slices.Index(keys, k)
				if i < 0 {
					t.Errorf("key %q missing (keys %v)", k, keys)
					continue
				}
				if i < last {
					t.Errorf("key %q comes before %q, want after (keys %v)", k, c.order[slices.Index(c.order, k)-1], keys)
				}
				last = i
			}
			validate(t, c.tool, env.StructuredContent)
		})
	}

	// A failed apply's text content is the same object, indented; "<" stays "<".
	b, err := json.Marshal(toolResult(run.ApplyClineEdits, commit).Content[0])
	if err != nil {
		t.Fatal(err)
	}
	var tc struct{ Text string }
	if err := json.Unmarshal(b, &tc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tc.Text, "<html>502</html>") || !strings.HasPrefix(tc.Text, "{\n  \"ok\": false,\n  \"kind\": \"commit_created\"") {
		t.Errorf("apply failure text:\n%s", tc.Text)
	}
}

// objectKeys lists the keys of a JSON object in document order.
func objectKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("structuredContent is not an object: %s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// validate checks structuredContent against the tool's advertised outputSchema.
func validate(t *testing.T, tool run.Tool, sc json.RawMessage) {
	t.Helper()
	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(outputSchema(tool)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("output.json", schema); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("output.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("structuredContent does not satisfy the outputSchema: %v\n%s", err, sc)
	}
}
