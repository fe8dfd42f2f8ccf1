package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// Background jobs and results that fit the client. A run tool called with "background": true
// starts a job (bridge/jobs) and answers at once with its jobId; cline_job reads the job's state,
// its progress after a cursor, its result when done, a page of a long result, or cancels it. A
// result whose answer or diff is longer than ResultMaxChars comes back cut, with a note and a
// "truncated" member naming the job that keeps the whole result; cline_job's page reads the
// whole text content in pages of ResultMaxChars characters.

// jobTool is the name of the job tool.
const jobTool = "cline_job"

// storedResult is what a job keeps of a run: the content a synchronous call would have answered.
type storedResult struct {
	Text       string          `json:"text"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
}

func store(tool run.Tool, r run.Result) (json.RawMessage, error) {
	res := toolResult(tool, r)
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	return json.Marshal(storedResult{Text: textOf(res), Structured: sc, IsError: res.IsError})
}

func textOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// startJob runs a validated call as a background job.
func (s *Server) startJob(tool run.Tool, call run.Call) *mcp.CallToolResult {
	job, err := s.opts.Jobs.Start(s.life(), string(tool), func(ctx context.Context, progress func(string)) (json.RawMessage, bool) {
		r := s.opts.Runner.Do(ctx, call, progress)
		b, err := store(tool, r)
		if err != nil {
			return nil, false
		}
		return b, r.OK
	})
	if err != nil {
		return toolResult(tool, run.Result{Kind: "launch_failed", Message: "could not start the background job: " + err.Error()})
	}
	text := fmt.Sprintf("Started background job %s (%s). Read its progress and result with cline_job {\"jobId\": %q}; cancel it with \"action\": \"cancel\".", job.ID, tool, job.ID)
	return mcp.NewToolResultStructured(map[string]any{"ok": true, "jobId": job.ID, "state": job.State, "warnings": []string{}, "attempts": 0}, text)
}

// fit cuts a result's answer and diff to ResultMaxChars together, keeps the whole result as a
// finished job and says so; a result that fits is returned as it is.
func (s *Server) fit(tool run.Tool, r run.Result) (run.Result, *truncation) {
	limit := s.opts.ResultMaxChars
	diffLen := 0
	if r.Diff != nil {
		diffLen = utf8.RuneCountInString(*r.Diff)
	}
	textLen := utf8.RuneCountInString(r.Text)
	if s.opts.Jobs == nil || limit <= 0 || textLen+diffLen <= limit {
		return r, nil
	}
	full := toolResult(tool, r)
	b, err := store(tool, r)
	if err != nil {
		return r, nil
	}
	job, err := s.opts.Jobs.Save(string(tool), b, r.OK)
	if err != nil {
		r.Warnings = append(r.Warnings, "the result is longer than --result-max-chars but could not be kept for paging ("+err.Error()+"); it is returned whole")
		return r, nil
	}
	total := utf8.RuneCountInString(textOf(full))
	t := &truncation{JobID: job.ID, Pages: (total + limit - 1) / limit, TotalChars: total}
	textBudget := min(textLen, max(limit/2, limit-diffLen))
	r.Text = cut(r.Text, textBudget)
	if r.Diff != nil {
		d := cut(*r.Diff, limit-textBudget)
		r.Diff = &d
	}
	r.Warnings = append(r.Warnings, fmt.Sprintf("the result is longer than this server returns at once (--result-max-chars %d): the answer (%d chars) and the diff (%d chars) were cut to fit; the whole result is kept: read it with cline_job {\"jobId\": %q, \"action\": \"result\", \"page\": 1} … page %d",
		limit, textLen, diffLen, job.ID, t.Pages))
	return r, t
}

// cut is the first n runes of s (n >= 0), marked as cut when it is.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	for j := range s {
		if n == 0 {
			return s[:j] + "…[cut]"
		}
		n--
	}
	return s
}

var jobInput = json.RawMessage(`{"type":"object","required":["jobId"],"properties":{` +
	`"jobId":{"type":"string","description":"The jobId of a background call, or of a cut result (its truncated.jobId)."},` +
	`"action":{"type":"string","enum":["status","result","cancel"],"description":"status (default): state, progress after cursor, and the result when done; result: the result, or a page of its text; cancel: stop the job (its cleanup still runs)."},` +
	`"cursor":{"type":"integer","minimum":0,"description":"Return only progress events after this one (the nextCursor of the last answer)."},` +
	`"page":{"type":"integer","minimum":1,"description":"With action result: this page (1-based) of the whole result's text, in pages of --result-max-chars characters."}},"additionalProperties":false}`)

var jobOutput = json.RawMessage(`{"type":"object","required":["jobId","state"],"properties":{` +
	`"jobId":{"type":"string"},"tool":{"type":"string"},"state":{"type":"string","enum":["running","succeeded","failed","cancelled"]},` +
	`"elapsedSeconds":{"type":"number"},"events":{"type":"array","items":{"type":"object","properties":{"seq":{"type":"integer"},"time":{"type":"string"},"text":{"type":"string"}}}},` +
	`"nextCursor":{"type":"integer"},"error":{"type":"string"},"result":{"type":"object"},` +
	`"page":{"type":"integer"},"pages":{"type":"integer"},"content":{"type":"string"}}}`)

func (s *Server) addJobTool() {
	t := mcp.NewToolWithRawSchema(jobTool, "Follow a background job of cline-mcp (a run tool called with \"background\": true) "+
		"or read a long result in pages: its state and progress, its result when done, or cancel it.", jobInput)
	t.RawOutputSchema = jobOutput
	t.Annotations = mcp.ToolAnnotation{Title: "Cline job", ReadOnlyHint: mcp.ToBoolPtr(false),
		DestructiveHint: mcp.ToBoolPtr(false), IdempotentHint: mcp.ToBoolPtr(false), OpenWorldHint: mcp.ToBoolPtr(false)}
	s.mcp.AddTool(t, s.jobHandler())
}

func jobArgs(raw any) (id, action string, cursor, page int, err error) {
	args, _ := raw.(map[string]any)
	action = "status"
	for k, v := range args {
		switch k {
		case "jobId":
			id, _ = v.(string)
		case "action":
			action, _ = v.(string)
		case "cursor", "page":
			n, ok := v.(float64)
			if !ok || n < 0 || n != float64(int(n)) {
				return "", "", 0, 0, fmt.Errorf("%s must be a non-negative integer (got %s)", k, describe(v))
			}
			if k == "cursor" {
				cursor = int(n)
			} else {
				page = int(n)
			}
		default:
			return "", "", 0, 0, fmt.Errorf("unknown argument %q for cline_job (accepted: jobId, action, cursor, page)", k)
		}
	}
	if !jobs.ValidID(id) {
		return "", "", 0, 0, fmt.Errorf("jobId must be a job id from an earlier answer (got %s)", describe(args["jobId"]))
	}
	if action != "status" && action != "result" && action != "cancel" {
		return "", "", 0, 0, fmt.Errorf("action must be status, result or cancel (got %q)", action)
	}
	return id, action, cursor, page, nil
}

func (s *Server) jobHandler() server.ToolHandlerFunc {
	return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id, action, cursor, page, err := jobArgs(req.Params.Arguments)
		if err != nil {
			return mcp.NewToolResultError("invalid arguments: " + err.Error()), nil
		}
		var j jobs.Job
		if action == "cancel" {
			j, err = s.opts.Jobs.Cancel(id)
		} else {
			j, err = s.opts.Jobs.Get(id)
		}
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return s.jobAnswer(j, action, cursor, page), nil
	}
}

// jobAnswer is cline_job's answer: state and progress after cursor, the result when done (or a
// page of its text).
func (s *Server) jobAnswer(j jobs.Job, action string, cursor, page int) *mcp.CallToolResult {
	events, next := j.After(cursor)
	out := map[string]any{"jobId": j.ID, "tool": j.Tool, "state": j.State,
		"elapsedSeconds": j.Updated.Sub(j.Created).Round(100 * time.Millisecond).Seconds(), "events": events, "nextCursor": next}
	if j.State == jobs.Running {
		out["elapsedSeconds"] = time.Since(j.Created).Round(100 * time.Millisecond).Seconds()
	}
	if j.Error != "" {
		out["error"] = j.Error
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Job %s (%s): %s after %.1f s", j.ID, j.Tool, j.State, out["elapsedSeconds"])
	for _, e := range events {
		fmt.Fprintf(&b, "\n[%d] %s", e.Seq, e.Text)
	}
	var stored storedResult
	if len(j.Result) > 0 && json.Unmarshal(j.Result, &stored) == nil {
		if page > 0 {
			return s.jobPage(out, stored, page)
		}
		if j.State != jobs.Running {
			out["result"] = stored.Structured
			b.WriteString("\n\n" + stored.Text)
		}
	} else if j.Error != "" {
		b.WriteString("\n" + j.Error)
	}
	res := mcp.NewToolResultStructured(out, b.String())
	res.IsError = j.State == jobs.Failed || j.State == jobs.Cancelled || stored.IsError
	return res
}

func (s *Server) jobPage(out map[string]any, stored storedResult, page int) *mcp.CallToolResult {
	size := s.opts.ResultMaxChars
	if size <= 0 {
		size = DefaultResultMaxChars
	}
	runes := []rune(stored.Text)
	pages := max(1, (len(runes)+size-1)/size)
	if page > pages {
		return mcp.NewToolResultError(fmt.Sprintf("page %d does not exist: the result has %d page(s)", page, pages))
	}
	chunk := string(runes[(page-1)*size : min(page*size, len(runes))])
	out["page"], out["pages"], out["content"] = page, pages, chunk
	return mcp.NewToolResultStructured(out, chunk)
}
