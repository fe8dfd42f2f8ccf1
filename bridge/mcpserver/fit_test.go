package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
)

// fixedRunner answers every call with one result.
type fixedRunner struct{ r run.Result }

func (f fixedRunner) Do(context.Context, run.Call, run.Progress) run.Result { return f.r }

// longText is n characters that JSON escapes in every way it can (quotes, newlines, tabs, a
// control character, U+2028) among plain and non-ASCII ones.
func longText(n int) string {
	unit := []rune("Line \"quoted\" \\ é ✓ <b>&\t\x01\u2028 0123456789\n")
	out := make([]rune, n)
	for i := range out {
		out[i] = unit[i%len(unit)]
	}
	return string(out)
}

// readPages reads every page of a kept result through cline_job, checks each answer's size, and
// returns the pages put together.
func readPages(t *testing.T, s *Server, limit int, tr map[string]any) string {
	t.Helper()
	var whole strings.Builder
	pages := int(tr["pages"].(float64))
	for p := 1; p <= pages; p++ {
		res, sc := callTool(t, s.jobHandler(), map[string]any{"jobId": tr["jobId"], "action": "result", "page": float64(p)})
		if n := chars(res); n > limit || res.IsError {
			t.Fatalf("page %d: %d characters (limit %d), error %v", p, n, limit, res.IsError)
		}
		whole.WriteString(sc.(map[string]any)["content"].(string))
	}
	_, sc := callTool(t, s.jobHandler(), map[string]any{"jobId": tr["jobId"], "action": "result", "page": float64(pages + 1)})
	if sc != nil {
		t.Errorf("page %d of %d exists: %v", pages+1, pages, sc)
	}
	return whole.String()
}

// TestEveryAnswerFits: a long answer, synchronous or in the background, comes back within the
// limit (text content and structuredContent together) with a truncated member and a note naming
// cline_job; the pages, each within the limit, put the whole text content together again.
func TestEveryAnswerFits(t *testing.T) {
	for _, c := range []struct{ limit, n int }{{60000, 200000}, {60000, 521149}, {1000, 20000}} {
		t.Run(fmt.Sprintf("%d_of_%d", c.n, c.limit), func(t *testing.T) {
			js := &jobs.Store{Dir: t.TempDir()}
			r := run.Result{OK: true, Text: longText(c.n), Attempts: 1, Isolation: "host", Warnings: []string{"w"}}
			s := New(Options{Runner: fixedRunner{r}, Jobs: js, ResultMaxChars: c.limit})
			want := textOf(toolResult(run.AskCline, r))
			h := s.handler(run.AskCline)

			res, sc := callTool(t, h, map[string]any{"prompt": "p"})
			m := sc.(map[string]any)
			tr, _ := m["truncated"].(map[string]any)
			if n := chars(res); n > c.limit || tr == nil || !strings.Contains(resultText(res), "cline_job") {
				t.Fatalf("synchronous: %d characters (limit %d), truncated %v", n, c.limit, tr)
			}
			t.Logf("synchronous answer: %d characters of %d, %v pages", chars(res), chars(toolResult(run.AskCline, r)), tr["pages"])
			validate(t, run.AskCline, mustJSON(res.StructuredContent))
			if got := readPages(t, s, c.limit, tr); got != want || int(tr["totalChars"].(float64)) != utf8.RuneCountInString(want) {
				t.Errorf("synchronous: the pages give %d characters, want the %d of the whole text", len(got), len(want))
			}

			_, sc = callTool(t, h, map[string]any{"prompt": "p", "background": true})
			id := sc.(map[string]any)["jobId"].(string)
			js.Wait(context.Background(), id)
			for _, action := range []string{"status", "result"} {
				res, sc := callTool(t, s.jobHandler(), map[string]any{"jobId": id, "action": action})
				m := sc.(map[string]any)
				result, _ := m["result"].(map[string]any)
				tr, _ := result["truncated"].(map[string]any)
				if n := chars(res); n > c.limit || tr == nil || tr["jobId"] != id {
					t.Fatalf("background %s: %d characters (limit %d), result's truncated %v", action, n, c.limit, tr)
				}
				t.Logf("background %s: %d characters", action, chars(res))
				validate(t, run.AskCline, mustJSON(result))
				if action == "result" {
					if got := readPages(t, s, c.limit, tr); got != want {
						t.Errorf("background: the pages give %d characters, want the %d of the whole text", len(got), len(want))
					}
				}
			}
		})
	}
}

// TestCutRunLists: a result too long even without its answer (thousands of changed files or
// findings, long tails) is cut within the limit and still satisfies its outputSchema.
func TestCutRunLists(t *testing.T) {
	var files []run.ChangedFile
	for i := range 5000 {
		files = append(files, run.ChangedFile{Path: fmt.Sprintf("src/pkg%d/file_%d.go", i%50, i), Status: "M"})
	}
	var findings []review.Finding
	for i := range 3000 {
		findings = append(findings, review.Finding{Severity: "high", File: "a.go", Line: i + 1, Title: "t", Detail: longText(80)})
	}
	diff := longText(300000)
	cases := map[run.Tool]run.Result{
		run.ApplyClineEdits: {OK: true, Text: longText(5000), ChangedFiles: files, Diff: &diff, Warnings: []string{}},
		run.ReviewCline:     {OK: true, Text: longText(90000), Review: &review.Report{Target: "uncommitted", Parsed: true, Findings: findings, Files: []review.FileStat{}}},
		run.AskCline:        {Kind: "non_zero_exit", Message: longText(5000), StderrTail: longText(20000), StdoutTail: longText(20000)},
	}
	for tool, r := range cases {
		for _, limit := range []int{1000, 60000} {
			t.Run(fmt.Sprintf("%s_%d", tool, limit), func(t *testing.T) {
				tr := &truncation{JobID: strings.Repeat("a", 32), Pages: 9, TotalChars: 1}
				res := cutRun(tool, r, pageNote(limit, tr), tr, limit, chars)
				if n := chars(res); n > limit {
					t.Errorf("%d characters, limit %d", n, limit)
				}
				validate(t, tool, mustJSON(res.StructuredContent))
				if !strings.Contains(mustJSONString(res.StructuredContent), "cline_job") {
					t.Errorf("no note on how to read the rest")
				}
			})
		}
	}
}

func mustJSONString(v any) string { return string(mustJSON(v)) }

// TestJobEventsFit: a running job's progress is handed out within the limit, each event once
// and in order as the client follows nextCursor; an event longer than the limit is cut.
func TestJobEventsFit(t *testing.T) {
	js := &jobs.Store{Dir: t.TempDir()}
	const limit = 1000
	s := New(Options{Runner: &countingRunner{}, Jobs: js, ResultMaxChars: limit})
	release := make(chan struct{})
	j, err := js.Start(context.Background(), "ask_cline", func(_ context.Context, progress func(string)) (json.RawMessage, bool) {
		for i := 1; i <= 200; i++ {
			progress(fmt.Sprintf("event %d %s", i, strings.Repeat("é", i*10)))
		}
		<-release
		return nil, true
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(release)
		js.Wait(context.Background(), j.ID)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for g, _ := js.Get(j.ID); len(g.Events) < 200; g, _ = js.Get(j.ID) {
		if time.Now().After(deadline) {
			t.Fatal("the job never reported its events")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cursor, seen := 0.0, 0
	for calls := 0; calls < 400; calls++ {
		res, sc := callTool(t, s.jobHandler(), map[string]any{"jobId": j.ID, "cursor": cursor})
		if n := chars(res); n > limit {
			t.Fatalf("cursor %v: %d characters", cursor, n)
		}
		m := sc.(map[string]any)
		for _, e := range m["events"].([]any) {
			seen++
			if seq := e.(map[string]any)["seq"].(float64); seq != float64(seen) {
				t.Fatalf("event %v where %d was due", seq, seen)
			}
		}
		cursor = m["nextCursor"].(float64)
		if m["moreEvents"] != true {
			break
		}
	}
	if seen != 200 {
		t.Errorf("followed the cursor to %d events, want 200", seen)
	}

	// A permission request waiting on the job (its longest: a title and four commands of 256
	// characters, about 3,400 characters in all, never cut: it is what the user approves) fits
	// beside the events under a limit that has room for it.
	q := &question{p: pendingPermission{PermissionID: "p1", Tool: "execute_command", Title: longText(256)}}
	for range 4 {
		q.p.Commands = append(q.p.Commands, longText(256))
	}
	const roomy = 8000
	s = New(Options{Runner: &countingRunner{}, Jobs: js, ResultMaxChars: roomy})
	s.live.register(j.ID, &liveJob{pending: []*question{q}})
	res, sc := callTool(t, s.jobHandler(), map[string]any{"jobId": j.ID})
	if n := chars(res); n > roomy || sc.(map[string]any)["pendingPermission"] == nil || len(sc.(map[string]any)["events"].([]any)) == 0 {
		t.Errorf("with a pending permission: %d characters (limit %d): %v", n, roomy, sc)
	}
}

// manySessions lists n sessions with long titles.
type manySessions int

func (n manySessions) List(now time.Time) ([]sessions.Record, []string) {
	var out []sessions.Record
	for i := range int(n) {
		out = append(out, sessions.Record{ID: fmt.Sprintf("1796278600502_lmK-X_%d", i), Tool: "ask_cline", Cwd: "/w",
			Created: now, LastUsed: now, Turns: 1, Title: longText(300)})
	}
	return out, nil
}

// TestSessionsFit: a listing longer than the limit lists what fits and keeps the whole for pages.
func TestSessionsFit(t *testing.T) {
	js := &jobs.Store{Dir: t.TempDir()}
	const limit = 5000
	s := New(Options{Runner: &countingRunner{}, Jobs: js, Sessions: manySessions(100), ResultMaxChars: limit})
	res, sc := callTool(t, s.sessionsHandler(), map[string]any{})
	m := sc.(map[string]any)
	tr, _ := m["truncated"].(map[string]any)
	if n := chars(res); n > limit || tr == nil || len(m["sessions"].([]any)) == 0 {
		t.Fatalf("%d characters (limit %d), truncated %v", n, limit, tr)
	}
	if err := schemaAccepts(t, compile(t, outputSchema(sessionsTool)), sc); err != nil {
		t.Error(err)
	}
	full := manySessions(100)
	recs, _ := full.List(time.Now())
	if got := readPages(t, s, limit, tr); !strings.HasPrefix(got, "100 session(s)") || !strings.Contains(got, recs[99].ID) {
		t.Errorf("the pages do not give the whole listing back: %d characters", len(got))
	}
}

// TestKeptResultWithoutRun: a kept result with no run to cut it from (a sessions listing, or a
// record of an earlier version) is left out of a status answer that it would not fit, which says
// how to read it in pages instead.
func TestKeptResultWithoutRun(t *testing.T) {
	js := &jobs.Store{Dir: t.TempDir()}
	const limit = 2000
	s := New(Options{Runner: &countingRunner{}, Jobs: js, ResultMaxChars: limit})
	text := longText(9000)
	b, err := json.Marshal(storedResult{Text: text, Structured: mustJSON(map[string]any{"text": text})})
	if err != nil {
		t.Fatal(err)
	}
	j, err := js.Save(string(sessionsTool), b, true)
	if err != nil {
		t.Fatal(err)
	}
	res, sc := callTool(t, s.jobHandler(), map[string]any{"jobId": j.ID, "action": "result"})
	m := sc.(map[string]any)
	tr, _ := m["truncated"].(map[string]any)
	if n := chars(res); n > limit || tr == nil || m["result"] != nil || !strings.Contains(resultText(res), `"page": 1}`) {
		t.Fatalf("%d characters (limit %d), truncated %v", n, limit, tr)
	}
	if got := readPages(t, s, limit, tr); got != text {
		t.Errorf("the pages give %d characters, want the %d kept", len(got), len(text))
	}
}
