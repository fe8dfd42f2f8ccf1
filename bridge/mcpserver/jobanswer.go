package mcpserver

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// status is a cline_job status answer in the making: the job's fields, the events it carries,
// the run's answer (nil: none yet, or left out) and notes for the text.
type status struct {
	out     jobOutput
	result  *mcp.CallToolResult
	notes   []string
	isError bool
}

func (st status) answer() *mcp.CallToolResult {
	out := st.out
	var b strings.Builder
	fmt.Fprintf(&b, "Job %s (%s): %s after %.1f s", out.JobID, out.Tool, out.State, out.ElapsedSeconds)
	for _, e := range out.Events {
		fmt.Fprintf(&b, "\n[%d] %s", e.Seq, e.Text)
	}
	if st.result != nil {
		if sc, err := compactJSON(st.result.StructuredContent); err == nil {
			out.Result = sc
		}
		b.WriteString("\n\n" + textOf(st.result))
	} else if out.Error != "" {
		b.WriteString("\n" + out.Error)
	}
	for _, n := range st.notes {
		b.WriteString("\n\n" + n)
	}
	res := mcp.NewToolResultStructured(out, b.String())
	res.IsError = st.isError
	return res
}

// jobAnswer is cline_job's answer: state and progress after cursor, the result when done (or a
// page of its text), within ResultMaxChars. When a result is there, the events get at most a
// quarter of the limit and the result the rest, cut when it does not fit.
func (s *Server) jobAnswer(j jobs.Job, cursor, page int) *mcp.CallToolResult {
	var stored storedResult
	hasResult := len(j.Result) > 0 && json.Unmarshal(j.Result, &stored) == nil
	if hasResult && page > 0 {
		return s.jobPage(j, stored, cursor, page)
	}
	st := status{out: jobOutput{JobID: j.ID, Tool: j.Tool, State: jobState(j.State), Error: j.Error,
		ElapsedSeconds: elapsed(j), Events: []jobs.Event{}, NextCursor: cursor},
		isError: j.State == jobs.Failed || j.State == jobs.Cancelled || stored.IsError}
	done := hasResult && j.State != jobs.Running
	limit := s.opts.ResultMaxChars
	events, next := j.After(cursor)
	budget := limit
	if done {
		budget = limit / 4
	} else {
		// A permission request waiting on the running job is added to the answer once it is made
		// (withPending): its room is kept free.
		base := st.answer()
		budget -= chars(s.withPending(st.answer(), j.ID)) - chars(base)
	}
	st = withEvents(st, events, next, budget)
	if !done {
		return st.answer()
	}
	st.result = &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(stored.Text)}, StructuredContent: stored.Structured, IsError: stored.IsError}
	if whole := st.answer(); chars(whole) <= limit {
		return whole
	}
	t := s.truncation(j, stored.Text)
	if stored.Run == nil {
		st.out.Truncated, st.result = t, nil
		st.notes = append(st.notes, pageNote(limit, t))
		return st.answer()
	}
	measure := func(res *mcp.CallToolResult) int {
		st := st
		st.result = res
		return chars(st.answer())
	}
	st.result = cutRun(run.Tool(j.Tool), *stored.Run, pageNote(limit, t), t, limit, measure)
	return st.answer()
}

// withEvents adds the events to st as far as they fit in budget, in order; when one is left
// out, nextCursor is the last one carried and moreEvents says so. An event that does not fit
// alone is cut, so that every answer moves the cursor on.
func withEvents(st status, events []jobs.Event, next, budget int) status {
	used := chars(st.answer())
	more := func(cursor int) string {
		return fmt.Sprintf("more progress after event %d: call cline_job again with \"cursor\": %d", cursor, cursor)
	}
	// What saying so costs at most: the note, its blank line and "moreEvents":true.
	reserve := utf8.RuneCountInString(more(math.MaxInt64)) + 2 + len(`,"moreEvents":true`)
	for i, e := range events {
		need := used + eventChars(e)
		if i < len(events)-1 {
			need += reserve
		}
		if need > budget && i == 0 {
			text := e.Text
			for n := utf8.RuneCountInString(text); need > budget && n > 0; need = used + eventChars(e) + reserve {
				n /= 2
				e.Text = cut(text, n)
			}
		}
		if need > budget {
			st.out.MoreEvents = true
			st.notes = append(st.notes, more(st.out.NextCursor))
			return st
		}
		used += eventChars(e)
		st.out.Events = append(st.out.Events, e)
		st.out.NextCursor = e.Seq
	}
	st.out.NextCursor = next
	return st
}

// eventChars is what an event adds to a status answer: its line of text and its JSON (and a
// comma).
func eventChars(e jobs.Event) int {
	b, _ := compactJSON(e)
	return utf8.RuneCountInString(fmt.Sprintf("\n[%d] %s", e.Seq, e.Text)) + utf8.RuneCount(b) + 1
}

// jobPage is page of a finished job's text (pageEnds).
func (s *Server) jobPage(j jobs.Job, stored storedResult, cursor, page int) *mcp.CallToolResult {
	ends := s.pageEnds(j, stored.Text)
	if page > len(ends) {
		return mcp.NewToolResultError(fmt.Sprintf("page %d does not exist: the result has %d page(s)", page, len(ends)))
	}
	start := 0
	if page > 1 {
		start = ends[page-2]
	}
	return pageOutput(j, cursor, page, len(ends), stored.Text[start:ends[page-1]])
}
