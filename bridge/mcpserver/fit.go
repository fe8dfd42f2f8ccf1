package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// Results that fit the client. Every answer of every tool stays within ResultMaxChars
// characters, counted as a client receives them: the text of every text block plus the
// structuredContent as compact JSON (no HTML escaping). A run's answer stands in both, so a cut
// answer carries a little under half the limit of it. A result that does not fit is kept whole
// as a finished job and comes back cut, with a warning and a "truncated" member that say how to
// read the rest: cline_job {"jobId", "action": "result", "page": n}, whose pages put the whole
// text content together again and fit themselves.

// cutMark ends every string that was cut.
const cutMark = "…[cut]"

// chars is the size of res as a client counts it.
func chars(res *mcp.CallToolResult) int {
	n := 0
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			n += utf8.RuneCountInString(t.Text)
		}
	}
	if res.StructuredContent != nil {
		if b, err := compactJSON(res.StructuredContent); err == nil {
			n += utf8.RuneCount(b)
		}
	}
	return n
}

// compactJSON is v as compact JSON without HTML escaping (what a client re-serialises).
func compactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// jsonChars is how many characters r takes inside a JSON string.
func jsonChars(r rune, size int) int {
	switch {
	case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029' || (r == utf8.RuneError && size == 1):
		return 6
	}
	return 1
}

// cut is the first n runes of s (n >= 0), marked as cut when it is.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	for j := range s {
		if n == 0 {
			return s[:j] + cutMark
		}
		n--
	}
	return s
}

// halve is the first half of s, marked as cut; "" once little is left.
func halve(s string) string {
	s = strings.TrimSuffix(s, cutMark)
	n := utf8.RuneCountInString(s)
	if n <= 2*utf8.RuneCountInString(cutMark) {
		return ""
	}
	return cut(s, n/2)
}

// answerRun is the answer to a synchronous call: the result as it is when it fits, else the
// whole result kept for paging and the answer cut to fit.
func (s *Server) answerRun(ctx context.Context, tool run.Tool, r run.Result) *mcp.CallToolResult {
	whole := toolResult(tool, r)
	limit := s.opts.ResultMaxChars
	if chars(whole) <= limit {
		return whole
	}
	note, t := s.keep(ctx, tool, r, whole)
	return cutRun(tool, r, note, t, limit, chars)
}

// keep saves the whole result as a finished job and returns the note saying how to read it.
func (s *Server) keep(ctx context.Context, tool run.Tool, r run.Result, whole *mcp.CallToolResult) (string, *truncation) {
	limit := s.opts.ResultMaxChars
	if s.opts.Jobs == nil {
		return fmt.Sprintf("the result is longer than this server returns at once (--result-max-chars %d) and was cut to fit; this server keeps no jobs to read the rest from", limit), nil
	}
	b, err := store(tool, r)
	var job jobs.Job
	if err == nil {
		job, err = s.opts.Jobs.SaveFor(s.owner(ctx), string(tool), b, r.OK)
	}
	if err != nil {
		return fmt.Sprintf("the result is longer than this server returns at once (--result-max-chars %d) and was cut to fit; it could not be kept to read the rest (%v)", limit, err), nil
	}
	t := s.truncation(job, textOf(whole))
	return pageNote(limit, t), t
}

// truncation says where the whole text of job is and in how many pages cline_job returns it.
func (s *Server) truncation(j jobs.Job, text string) *truncation {
	return &truncation{JobID: j.ID, Pages: len(s.pageEnds(j, text)), TotalChars: utf8.RuneCountInString(text)}
}

func pageNote(limit int, t *truncation) string {
	return fmt.Sprintf("cut to fit --result-max-chars %d (cuts end in %s); the whole result (%d characters of text) is kept: read it with cline_job {\"jobId\": %q, \"action\": \"result\", \"page\": 1} through \"page\": %d",
		limit, cutMark, t.TotalChars, t.JobID, t.Pages)
}

// cutRun is the answer of r cut so that measure of it is at most limit: the answer and the diff
// first (the answer keeps at least half of what they share), then, when even without them it
// does not fit, the longest of the lists and tails, halved in turn. note (how to read the rest)
// becomes the last warning; t, when set, is the truncated member.
func cutRun(tool run.Tool, r run.Result, note string, t *truncation, limit int, measure func(*mcp.CallToolResult) int) *mcp.CallToolResult {
	r.Warnings = append(slices.Clone(r.Warnings), note)
	build := func(c run.Result) *mcp.CallToolResult {
		res := toolResult(tool, c)
		if t != nil {
			res.StructuredContent = append(res.StructuredContent.(object), member{"truncated", t})
		}
		return res
	}
	diff := ""
	if r.Diff != nil {
		diff = *r.Diff
	}
	textLen, diffLen := utf8.RuneCountInString(r.Text), utf8.RuneCountInString(diff)
	c := r
	// try cuts the answer and the diff to budget characters together.
	try := func(budget int) (*mcp.CallToolResult, int) {
		textBudget := min(textLen, max(budget/2, budget-diffLen))
		c.Text = cut(r.Text, textBudget)
		if r.Diff != nil {
			d := cut(diff, budget-textBudget)
			c.Diff = &d
		}
		res := build(c)
		return res, measure(res) - limit
	}
	hi := min(textLen+diffLen, limit)
	res, over := try(hi)
	if over <= 0 {
		return res
	}
	// Both carry the answer and the diff: each character less saves about two (more when
	// JSON escapes it). Step down until it fits, then search for the most that fits.
	lo := -1
	for i := 0; hi > 0 && i < 40; i++ {
		b := max(0, hi-max(1, (over+1)/2))
		if r, o := try(b); o <= 0 {
			lo, res = b, r
			break
		} else {
			hi, over = b, o
		}
	}
	if lo >= 0 {
		for hi-lo > max(1, limit/256) {
			mid := (lo + hi) / 2
			if r, o := try(mid); o <= 0 {
				lo, res = mid, r
			} else {
				hi = mid
			}
		}
		return res
	}
	res, _ = try(0)
	for i := 0; i < 400 && measure(res) > limit && shrinkRest(&c); i++ {
		res = build(c)
	}
	return res
}

// shrinkRest halves the longest of the lists and tails of c (never the last warning, the note);
// false when nothing is left to halve.
func shrinkRest(c *run.Result) bool {
	size := func(v any) int {
		b, _ := json.Marshal(v)
		return len(b)
	}
	var cuts []func()
	var sizes []int
	addList := func(n int, v any, f func()) {
		if n > 0 {
			cuts, sizes = append(cuts, f), append(sizes, size(v))
		}
	}
	addList(len(c.ChangedFiles), c.ChangedFiles, func() { c.ChangedFiles = c.ChangedFiles[:len(c.ChangedFiles)/2] })
	addList(len(c.Rejected), c.Rejected, func() { c.Rejected = c.Rejected[:len(c.Rejected)/2] })
	addList(len(c.Warnings)-1, c.Warnings[:max(0, len(c.Warnings)-1)], func() {
		c.Warnings = append(slices.Clone(c.Warnings[:(len(c.Warnings)-1)/2]), c.Warnings[len(c.Warnings)-1])
	})
	if c.Review != nil {
		rv := *c.Review
		c.Review = &rv
		addList(len(rv.Findings), rv.Findings, func() { c.Review.Findings = c.Review.Findings[:len(c.Review.Findings)/2] })
		addList(len(rv.Files), rv.Files, func() { c.Review.Files = c.Review.Files[:len(c.Review.Files)/2] })
		addList(len(rv.Summary), rv.Summary, func() { c.Review.Summary = halve(c.Review.Summary) })
	}
	for _, p := range []*string{&c.Message, &c.StderrTail, &c.StdoutTail} {
		addList(len(*p), *p, func() { *p = halve(*p) })
	}
	if len(cuts) == 0 {
		return false
	}
	longest := 0
	for i, n := range sizes {
		if n > sizes[longest] {
			longest = i
		}
	}
	cuts[longest]()
	return true
}

// elapsed is how long a job ran (so far).
func elapsed(j jobs.Job) float64 {
	if j.State == jobs.Running {
		return time.Since(j.Created).Round(100 * time.Millisecond).Seconds()
	}
	return j.Updated.Sub(j.Created).Round(100 * time.Millisecond).Seconds()
}

// pageOutput is cline_job's answer for a page of a finished job's text.
func pageOutput(j jobs.Job, cursor, page, pages int, content string) *mcp.CallToolResult {
	out := jobOutput{JobID: j.ID, Tool: j.Tool, State: jobState(j.State), Error: j.Error, ElapsedSeconds: elapsed(j),
		Events: []jobs.Event{}, NextCursor: cursor, Page: page, Pages: pages, Content: content}
	return mcp.NewToolResultStructured(out, content)
}

// pageEnds splits text into the pages cline_job returns, as the byte offsets where each ends:
// every page answer (the page in the text content and in structuredContent.content, and the
// job's fields) stays within ResultMaxChars. The split depends only on the finished job and the
// limit, so every call finds the same pages.
func (s *Server) pageEnds(j jobs.Job, text string) []int {
	// The fields of a page answer at their longest (numbers of 19 digits), with a page of "x".
	envelope := chars(pageOutput(j, math.MaxInt64, math.MaxInt64, math.MaxInt64, "x")) - 2
	budget := max(1, s.opts.ResultMaxChars-envelope)
	var ends []int
	used := 0
	for i, r := range text {
		c := 1 + jsonChars(r, utf8.RuneLen(r))
		if r == utf8.RuneError {
			_, size := utf8.DecodeRuneInString(text[i:])
			c = 1 + jsonChars(r, size)
		}
		if used > 0 && used+c > budget {
			ends = append(ends, i)
			used = 0
		}
		used += c
	}
	return append(ends, len(text))
}
