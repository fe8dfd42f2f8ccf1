package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// answerChars is the size of an answer as a client receives it: the text of every text block and
// the structuredContent as compact JSON (no HTML escaping), in characters.
func answerChars(t *testing.T, res *mcp.CallToolResult) int {
	t.Helper()
	n := 0
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			n += utf8.RuneCountInString(tc.Text)
		}
	}
	if res.StructuredContent != nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res.StructuredContent); err != nil {
			t.Fatal(err)
		}
		n += utf8.RuneCount(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	}
	return n
}

// filler is n characters of text with the characters JSON escapes (quotes, backslashes, newlines,
// tabs) and non-ASCII ones among plain ones.
func filler(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < 2*n; i++ {
		fmt.Fprintf(&b, "line %d: \"quoted\" \\ é ✓ <b>&\t.\n", i)
	}
	return string([]rune(b.String())[:n])
}

// fitCall calls tool and fails the test when the answer is longer than limit.
func (e *env) fitCall(limit int, tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res := e.sess.Call(ctx, tool, args)
	if n := answerChars(e.t, res); n > limit {
		e.t.Errorf("%s %v: the answer is %d characters, more than --result-max-chars %d", tool, args["action"], n, limit)
	}
	return res, mcpsession.Structured(e.t, res)
}

// readAllPages reads every page of a kept result with cline_job, each answer within limit, and
// returns them put together.
func (e *env) readAllPages(limit int, tr map[string]any) string {
	e.t.Helper()
	var whole strings.Builder
	pages := int(tr["pages"].(float64))
	for p := 1; p <= pages; p++ {
		_, pg := e.fitCall(limit, "cline_job", map[string]any{"jobId": tr["jobId"], "action": "result", "page": p})
		whole.WriteString(pg["content"].(string))
	}
	if got := whole.String(); utf8.RuneCountInString(got) != int(tr["totalChars"].(float64)) {
		e.t.Errorf("the %d pages hold %d characters, truncated says %v", pages, utf8.RuneCountInString(got), tr["totalChars"])
	}
	return whole.String()
}

// wantCut checks a cut result: a truncated member and a warning naming cline_job, the jobId and
// the last page.
func wantCut(t *testing.T, what string, res *mcp.CallToolResult, sc map[string]any) map[string]any {
	t.Helper()
	tr, _ := sc["truncated"].(map[string]any)
	if sc["ok"] != true || tr == nil {
		t.Fatalf("%s: not cut: ok %v truncated %v", what, sc["ok"], tr)
	}
	w, _ := json.Marshal(sc["warnings"])
	how := fmt.Sprintf(`cline_job {"jobId": %q, "action": "result", "page": 1} through "page": %v`, tr["jobId"], tr["pages"])
	if !strings.Contains(string(w), strings.ReplaceAll(how, `"`, `\"`)) {
		t.Errorf("%s: the warnings %s do not say how to read the rest (%s)", what, w, how)
	}
	if res != nil && !strings.Contains(resultText(res), how) {
		t.Errorf("%s: the text does not say how to read the rest", what)
	}
	return tr
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

// TestLongResultsFit: answers of 200,000 and 521,149 characters through a real MCP client, called
// synchronously and in the background (cline_job's status and result, without a page): every
// answer of every tool stays within --result-max-chars, counting the text content and the
// structuredContent together, and says how to read the rest; the pages, each within the limit,
// put the whole answer together again, the same for both paths.
func TestLongResultsFit(t *testing.T) {
	e := prepareEnv(t)
	const limit = 60000
	e.start(acpServerArgs(e, jobsArgs(e, "--result-max-chars", fmt.Sprint(limit))...)...)
	for _, n := range []int{200000, 521149} {
		prompt := "fake:echo " + filler(n-len("fake:echo "))
		res, sc := e.fitCall(limit, "ask_cline", map[string]any{"prompt": prompt, "cwd": e.work})
		tr := wantCut(t, "synchronous", res, sc)
		whole := e.readAllPages(limit, tr)
		answer, _, _ := strings.Cut(whole, "\n\nWarnings:\n")
		if answer != prompt {
			t.Errorf("%d: the pages give an answer of %d characters, want the CLI's %d", n, utf8.RuneCountInString(answer), n)
		}
		t.Logf("%d characters: synchronous answer %d characters, %v pages", n, answerChars(t, res), tr["pages"])

		_, bg := e.fitCall(limit, "ask_cline", map[string]any{"prompt": prompt, "cwd": e.work, "background": true})
		id, _ := bg["jobId"].(string)
		deadline := time.Now().Add(90 * time.Second)
		for cursor := 0.0; ; time.Sleep(100 * time.Millisecond) {
			res, st := e.fitCall(limit, "cline_job", map[string]any{"jobId": id, "cursor": cursor})
			cursor = st["nextCursor"].(float64)
			if st["state"] == "running" {
				if time.Now().After(deadline) {
					t.Fatalf("job %s still running", id)
				}
				continue
			}
			if st["state"] != "succeeded" {
				t.Fatalf("job ended %v: %v", st["state"], st["error"])
			}
			result, _ := st["result"].(map[string]any)
			btr := wantCut(t, "background status", nil, result)
			if btr["jobId"] != id || !strings.Contains(resultText(res), fmt.Sprintf("%q", id)) {
				t.Errorf("the cut background result names job %v, want %s, and the text says how", btr["jobId"], id)
			}
			t.Logf("%d characters: background status %d characters", n, answerChars(t, res))
			break
		}
		res, st := e.fitCall(limit, "cline_job", map[string]any{"jobId": id, "action": "result"})
		result, _ := st["result"].(map[string]any)
		btr := wantCut(t, "background result", nil, result)
		if got := e.readAllPages(limit, btr); got != whole {
			t.Errorf("%d: the background job's pages (%d characters) differ from the synchronous result's (%d)", n, len(got), len(whole))
		}
		t.Logf("%d characters: background result %d characters", n, answerChars(t, res))
	}
	e.fitCall(limit, "cline_sessions", map[string]any{})
}
