package cline

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestParserEventsAndProgress(t *testing.T) {
	var got []string
	p := NewParser(func(e Event) {
		if s := e.Progress(); s != "" && (len(got) == 0 || got[len(got)-1] != s) {
			got = append(got, s)
		}
	})
	p.Write(recordingByName(t, "b_run_commands_tool").stdout)
	p.Close()
	want := []string{"iteration 1", "tool: run_commands", "iteration 2", "writing answer…", "done: completed", "finished: completed"}
	if !slices.Equal(got, want) {
		t.Errorf("got progress %q, want %q", got, want)
	}
}

func TestParserEventFields(t *testing.T) {
	var events []Event
	p := NewParser(func(e Event) { events = append(events, e) })
	p.Write(recordingByName(t, "b_edit_autoapprove_false").stdout)
	p.Close()
	var denied []Event
	for _, e := range events {
		if e.EventType == "content_end" && e.ContentType == "tool" {
			denied = append(denied, e)
		}
	}
	if len(denied) != 2 || denied[0].ToolName != "editor" || !strings.Contains(denied[0].Error, `Tool "editor" requires approval`) {
		t.Fatalf("got denied tool events %+v, want two editor denials", denied)
	}
	if got := denied[0].Progress(); got != "tool editor failed" {
		t.Errorf("got progress %q, want %q", got, "tool editor failed")
	}
	s := p.Summary()
	if s.FailedToolCalls != 2 || !slices.Equal(s.FailedTools, []ToolCount{{"editor", 2}}) || s.MutatingSuccesses != nil {
		t.Errorf("got failed %d %v mutating %v, want 2 editor failures and no successes", s.FailedToolCalls, s.FailedTools, s.MutatingSuccesses)
	}
	if s.ErrorCount != 1 || !s.Errors[0].Recoverable || !strings.HasPrefix(s.Errors[0].Message, "2 tool call(s) failed") {
		t.Errorf("got errors %d %+v, want one recoverable tool failure", s.ErrorCount, s.Errors)
	}
}

func TestParserOversizeLineIsSkipped(t *testing.T) {
	huge := `{"type":"agent_event","event":{"type":"content_end","contentType":"text","text":"` + strings.Repeat("a", MaxLineBytes) + `"}}`
	input := lineIter + "\n" + huge + "\n" + lineResultOK + "\n"
	for _, size := range []int{0, 1 << 10, 64 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			s := parseChunks([]byte(input), size, nil)
			if s.Lines != 3 || s.OversizeLines != 1 || s.JSONLines != 2 || s.NonJSONLines != 0 {
				t.Errorf("got lines %d oversize %d json %d nonjson %d, want 3 1 2 0", s.Lines, s.OversizeLines, s.JSONLines, s.NonJSONLines)
			}
			if s.Result == nil || s.Result.Text != "PONG" {
				t.Errorf("got result %+v, want the line after the oversize one parsed", s.Result)
			}
		})
	}
}

func TestParserLineExactlyAtCapIsKept(t *testing.T) {
	prefix, suffix := `{"type":"run_result","finishReason":"completed","text":"`, `"}`
	line := prefix + strings.Repeat("b", MaxLineBytes-len(prefix)-len(suffix)) + suffix
	s := parseChunks([]byte(line+"\n"), 1<<16, nil)
	if s.OversizeLines != 0 || s.Result == nil || len(s.Result.Text)+s.Result.Truncated != MaxLineBytes-len(prefix)-len(suffix) {
		t.Errorf("got oversize %d result %v, want the %d-byte line parsed", s.OversizeLines, s.Result != nil, MaxLineBytes)
	}
	if len(s.Result.Text) != MaxTextBytes {
		t.Errorf("got kept text of %d bytes, want the %d cap", len(s.Result.Text), MaxTextBytes)
	}
}

func TestParserUnterminatedLastLine(t *testing.T) {
	p := NewParser(nil)
	p.Write([]byte(lineIter + "\r\n" + lineResultOK))
	if s := p.Summary(); s.Result != nil || s.Lines != 1 {
		t.Fatalf("got lines %d result %v before Close, want 1 and none", s.Lines, s.Result)
	}
	p.Close()
	if s := p.Summary(); s.Result == nil || s.Lines != 2 {
		t.Errorf("got lines %d result %v after Close, want 2 and the run_result", s.Lines, s.Result)
	}
}

func TestParserNonJSON(t *testing.T) {
	s := parseChunks([]byte("\x1b[2mhello\x1b[0m\n\n   \n[1,2]\n{broken\n"+lineIter+"\n"), 3, nil)
	if s.Lines != 4 || s.NonJSONLines != 3 || s.JSONLines != 1 || s.NonJSONSample != "hello" {
		t.Errorf("got lines %d nonjson %d json %d sample %q, want 4 3 1 \"hello\" (blank lines ignored)", s.Lines, s.NonJSONLines, s.JSONLines, s.NonJSONSample)
	}
}

func TestParserBoundedLists(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, `{"type":"agent_event","event":{"type":"content_start","contentType":"tool","toolName":"tool_%d"}}`+"\n", i)
		fmt.Fprintf(&b, `{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"tool_%d","error":"{\"error\":\"no %d\"}"}}`+"\n", i, i)
		b.WriteString(agentError(fmt.Sprintf("failure %d", i), "unknown") + "\n")
		b.WriteString(jsonErr(fmt.Sprintf("top %d", i)) + "\n")
	}
	s := parseChunks([]byte(b.String()), 0, nil)
	if s.ToolCalls != 1000 || len(s.Tools) != maxDistinct || s.FailedToolCalls != 1000 || len(s.FailedTools) != maxDistinct {
		t.Errorf("got calls %d tools %d failed %d failedTools %d, want 1000 %d 1000 %d", s.ToolCalls, len(s.Tools), s.FailedToolCalls, len(s.FailedTools), maxDistinct, maxDistinct)
	}
	if s.ErrorCount != 1000 || len(s.Errors) != maxKept || s.Errors[maxKept-1].Message != "failure 999" {
		t.Errorf("got %d errors, kept %d, last %+v; want 1000, %d, failure 999", s.ErrorCount, len(s.Errors), s.Errors[len(s.Errors)-1], maxKept)
	}
	if len(s.TopErrors) != maxKept || s.TopErrors[maxKept-1] != "top 999" || s.LastToolError != "no 999" {
		t.Errorf("got top errors %q last tool error %q, want the last %d and \"no 999\"", s.TopErrors, s.LastToolError, maxKept)
	}
}

func TestParserSummaryIsASnapshot(t *testing.T) {
	p := NewParser(nil)
	p.Write(recordingByName(t, "b_denied_tools_mistake_limit").stdout)
	s := p.Summary()
	s.FailedTools[0].Count = 99
	s.Result.Text = "changed"
	s.Errors[0].Message = "changed"
	again := p.Summary()
	if again.FailedTools[0].Count != 3 || again.Result.Text != "" || again.Errors[0].Message == "changed" {
		t.Errorf("got %+v after mutating a snapshot, want the parser unaffected", again)
	}
}

// TestParserConcurrentSummary reads snapshots while the writer runs and from inside OnEvent;
// run with -race.
func TestParserConcurrentSummary(t *testing.T) {
	data := recordingByName(t, "a_multiturn_text").stdout
	var p *Parser
	p = NewParser(func(Event) { _ = p.Summary() }) // OnEvent may read a snapshot: no deadlock
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				_ = p.Summary()
			}
		}
	}()
	for range 50 {
		for i := 0; i < len(data); i += 13 {
			p.Write(data[i:min(i+13, len(data))])
		}
	}
	p.Close()
	close(done)
	wg.Wait()
	if s := p.Summary(); s.Result == nil || s.Result.FinishReason != "completed" {
		t.Errorf("got %+v, want a completed result", s.Result)
	}
}

// TestParserFailedCommands: a failed command is success:false inside run_commands' output array,
// with no top-level error (y_run_commands_*): the call is a failed tool call, and only a call
// with at least one successful command counts as a successful mutating call.
func TestParserFailedCommands(t *testing.T) {
	for _, tc := range []struct {
		rec        string
		mutating   []ToolCount
		lastErrSub string
	}{
		{"y_run_commands_mixed", []ToolCount{{"run_commands", 1}}, "false: Command exited with code 1"},
		{"y_run_commands_all_failed", nil, "false: Command exited with code 1"},
		{"y_run_commands_no_shell", nil, "echo hi: Command failed: Failed to execute command: ENOENT: no such file or directory, posix_spawn '/bin/bash'"},
	} {
		t.Run(tc.rec, func(t *testing.T) {
			var ends []Event
			p := NewParser(func(e Event) {
				if e.EventType == "content_end" && e.ContentType == "tool" {
					ends = append(ends, e)
				}
			})
			p.Write(recordingByName(t, tc.rec).stdout)
			p.Close()
			s := p.Summary()
			if s.FailedToolCalls != 1 || !slices.Equal(s.FailedTools, []ToolCount{{"run_commands", 1}}) {
				t.Errorf("got failed %d %v, want one failed run_commands call", s.FailedToolCalls, s.FailedTools)
			}
			if !slices.Equal(s.MutatingSuccesses, tc.mutating) {
				t.Errorf("got mutating successes %v, want %v", s.MutatingSuccesses, tc.mutating)
			}
			if !strings.Contains(s.LastToolError, tc.lastErrSub) {
				t.Errorf("got last tool error %q, want it to contain %q", s.LastToolError, tc.lastErrSub)
			}
			if len(ends) != 1 || ends[0].Progress() != "tool run_commands failed" {
				t.Errorf("got tool ends %+v, want one failed run_commands (progress %q)", ends, "tool run_commands failed")
			}
		})
	}
	// b_run_commands_tool: every command succeeded.
	s := parseChunks(recordingByName(t, "b_run_commands_tool").stdout, 0, nil)
	if s.FailedToolCalls != 0 || !slices.Equal(s.MutatingSuccesses, []ToolCount{{"run_commands", 1}}) {
		t.Errorf("b_run_commands_tool: got failed %d mutating %v, want 0 and one run_commands success", s.FailedToolCalls, s.MutatingSuccesses)
	}
}

// TestParserToolOutputShapes covers the outputs of 3.0.65's tools (read in its source): an
// object with success:false (editor's own validation), an array (read_files and the other list
// tools), a denial (top-level error), and shapes the parser does not know (kept as success).
func TestParserToolOutputShapes(t *testing.T) {
	end := func(tool, rest string) string {
		return `{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"` + tool + `","toolCallId":"c"` + rest + `}}`
	}
	for _, tc := range []struct {
		name     string
		line     string
		failed   bool
		mutating bool
		msg      string
	}{
		{"editor ok", end("editor", `,"output":{"query":"edit:/r/a","result":"File created successfully at: /r/a","success":true}`), false, true, ""},
		{"editor failed", end("editor", `,"output":{"query":"edit:/r/a","result":"","error":"Editor operation failed: EROFS: read-only file system","success":false}`), true, false, "edit:/r/a: Editor operation failed: EROFS: read-only file system"},
		{"read_files one missing", end("read_files", `,"output":[{"query":"/r/a","result":"1 | x","success":true},{"query":"/r/b","result":"","error":"Error reading file: ENOENT","success":false}]`), true, false, "/r/b: Error reading file: ENOENT"},
		{"denied", end("editor", `,"output":{"error":"Tool \"editor\" requires approval"},"error":"{\"error\":\"Tool \\\"editor\\\" requires approval\"}"`), true, false, `Tool "editor" requires approval`},
		{"string output", end("run_commands", `,"output":"done"`), false, true, ""},
		{"no output", end("run_commands", ``), false, true, ""},
		{"failed without error text", end("run_commands", `,"output":[{"query":"x","result":"boom","success":false}]`), true, false, "x: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parseChunks([]byte(tc.line+"\n"), 0, nil)
			if got := s.FailedToolCalls == 1; got != tc.failed {
				t.Errorf("got failed %v, want %v", got, tc.failed)
			}
			if got := len(s.MutatingSuccesses) == 1; got != tc.mutating {
				t.Errorf("got mutating success %v, want %v", got, tc.mutating)
			}
			if s.LastToolError != tc.msg {
				t.Errorf("got last tool error %q, want %q", s.LastToolError, tc.msg)
			}
		})
	}
}
