package cline

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
)

// Usage is token and cost accounting as the CLI reports it.
type Usage struct {
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64   `json:"cacheWriteTokens,omitempty"`
	TotalCost        float64 `json:"totalCost"`
}

// Model is the model a run used (run_result.model).
type Model struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
}

// Result is the last run_result line. Text is capped at MaxTextBytes; Truncated counts the
// bytes cut off.
type Result struct {
	FinishReason   string `json:"finishReason"` // completed | error | aborted
	Text           string `json:"text"`
	Truncated      int    `json:"truncated,omitempty"`
	Iterations     int    `json:"iterations"`
	Usage          *Usage `json:"usage,omitempty"`
	AggregateUsage *Usage `json:"aggregateUsage,omitempty"`
	DurationMs     int64  `json:"durationMs"`
	Model          *Model `json:"model,omitempty"`
}

// Done is the last agent_event of type done.
type Done struct {
	Reason     string `json:"reason"` // completed | aborted (| error, never observed)
	Text       string `json:"text"`
	Truncated  int    `json:"truncated,omitempty"`
	Iterations int    `json:"iterations"`
	Usage      *Usage `json:"usage,omitempty"`
}

// Aborted is a run_aborted line; it follows run_result when the run was aborted.
type Aborted struct {
	Reason  string `json:"reason"` // local_abort | external_abort
	Message string `json:"message"`
}

// AgentError is an agent_event of type error. ErrorClass (auth, context_window_exceeded,
// unknown) is set only when Recoverable is false.
type AgentError struct {
	Message     string `json:"message"`
	ErrorClass  string `json:"errorClass,omitempty"`
	Recoverable bool   `json:"recoverable"`
	Iteration   int    `json:"iteration,omitempty"`
}

// ToolCount is a tool name and how often something happened to it.
type ToolCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Summary is everything the bridge keeps of a run's stdout. Every list is bounded: errors keep
// the last few, tool lists keep up to 64 distinct names, text is capped.
type Summary struct {
	Lines         int    `json:"lines"`         // non-blank lines, oversize ones included
	JSONLines     int    `json:"jsonLines"`     // lines that are a JSON object
	NonJSONLines  int    `json:"nonJsonLines"`  // anything else: never printed by a --json run
	OversizeLines int    `json:"oversizeLines"` // lines over MaxLineBytes, skipped unread
	NonJSONSample string `json:"nonJsonSample,omitempty"`
	LastEvent     string `json:"lastEvent,omitempty"` // e.g. "agent_event/iteration_start"
	Iteration     int    `json:"iteration,omitempty"` // of the last iteration_start

	Result  *Result  `json:"result,omitempty"`
	Done    *Done    `json:"done,omitempty"`
	Aborted *Aborted `json:"aborted,omitempty"`

	Errors     []AgentError `json:"errors,omitempty"` // the last few agent_event errors
	ErrorCount int          `json:"errorCount,omitempty"`
	TopErrors  []string     `json:"topErrors,omitempty"` // top-level {"type":"error"} messages

	ToolCalls         int         `json:"toolCalls"`
	Tools             []string    `json:"tools,omitempty"` // distinct, in order of first call
	FailedToolCalls   int         `json:"failedToolCalls"`
	FailedTools       []ToolCount `json:"failedTools,omitempty"` // denied or failed, per tool
	LastToolError     string      `json:"lastToolError,omitempty"`
	MutatingSuccesses []ToolCount `json:"mutatingSuccesses,omitempty"`
	// Successes counts, per tool, the calls that succeeded (at least one operation did not fail).
	Successes []ToolCount `json:"successes,omitempty"`

	LastText          string `json:"lastText,omitempty"` // last whole assistant message
	LastTextTruncated int    `json:"lastTextTruncated,omitempty"`
	Usage             *Usage `json:"usage,omitempty"` // running totals of the last usage event
}

// Event is one parsed stdout line, handed to Parser.OnEvent for progress reporting. Text fields
// are short (at most 256 bytes).
type Event struct {
	Type          string // hook_event | agent_event | run_result | run_aborted | error | run_start | ...
	EventType     string // agent_event: iteration_start, content_start, content_end, usage, error, done, ...
	HookEventName string // hook_event: agent_start, tool_call, tool_result, agent_end, agent_error
	ContentType   string // content_*: text | reasoning | tool
	ToolName      string
	Text          string // a text delta, an error message, a result text (shortened)
	Error         string // content_end tool: why the call was denied or failed
	Iteration     int
	Reason        string // done, run_aborted, run_result (finishReason)
	// Usage is a usage event's running totals (its cost is what spend limits follow).
	Usage *Usage
}

// Progress is a short human description of e for a progress notification, or "" when e is not
// worth one.
func (e Event) Progress() string {
	switch e.Type {
	case "run_result":
		return "finished: " + e.Reason
	case "agent_event":
	default:
		return ""
	}
	switch e.EventType {
	case "iteration_start":
		return "iteration " + strconv.Itoa(e.Iteration)
	case "content_start":
		switch e.ContentType {
		case "tool":
			return "tool: " + e.ToolName
		case "reasoning":
			return "thinking…"
		case "text":
			return "writing answer…"
		}
	case "content_end":
		if e.ContentType == "tool" && e.Error != "" {
			return "tool " + e.ToolName + " failed"
		}
	case "error":
		return "error: " + capTo(e.Text, 120)
	case "done":
		return "done: " + e.Reason
	}
	return ""
}

// Parser reads a `--json` run's stdout. It is an io.Writer fed with arbitrary chunks; it splits
// lines itself, parses each complete line, calls OnEvent synchronously and keeps a bounded
// Summary. Write and Close must not be called concurrently with each other (the executor has one
// writer per stream); Summary may be called from any goroutine at any time. OnEvent runs on the
// writer's goroutine without the parser's lock held, so it may call Summary.
type Parser struct {
	OnEvent func(Event)

	split lineSplitter // writer-owned

	mu sync.Mutex
	s  Summary
}

// NewParser returns a Parser that calls onEvent (may be nil) for every JSON line.
func NewParser(onEvent func(Event)) *Parser {
	return &Parser{OnEvent: onEvent}
}

// Write consumes a chunk of stdout. It never fails.
func (p *Parser) Write(b []byte) (int, error) {
	p.split.max = MaxLineBytes
	p.split.feed(b, p.line)
	return len(b), nil
}

// Close parses a final line that lacks its newline. Further writes start a new line.
func (p *Parser) Close() error {
	p.split.max = MaxLineBytes
	p.split.flush(p.line)
	return nil
}

// Summary returns a snapshot that shares nothing with the parser.
func (p *Parser) Summary() Summary {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.s.clone()
}

// wire is the subset of a stdout line the parser reads. Fields it does not declare (tool inputs
// and outputs, stacks, accumulated text) are skipped by the decoder without being kept.
type wire struct {
	Type           string     `json:"type"`
	HookEventName  string     `json:"hookEventName"`
	Event          *wireEvent `json:"event"`
	FinishReason   string     `json:"finishReason"`
	Iterations     int        `json:"iterations"`
	Usage          *Usage     `json:"usage"`
	AggregateUsage *Usage     `json:"aggregateUsage"`
	DurationMs     int64      `json:"durationMs"`
	Text           string     `json:"text"`
	Model          *Model     `json:"model"`
	Reason         string     `json:"reason"`
	Message        any        `json:"message"`
}

type wireEvent struct {
	Type        string          `json:"type"`
	ContentType string          `json:"contentType"`
	Text        string          `json:"text"`
	ToolName    string          `json:"toolName"`
	Iteration   int             `json:"iteration"`
	Iterations  int             `json:"iterations"`
	Reason      string          `json:"reason"`
	Error       json.RawMessage `json:"error"`  // content_end tool: a string; error event: {name,message,stack}
	Output      toolOutput      `json:"output"` // content_end tool
	ErrorClass  string          `json:"errorClass"`
	Recoverable *bool           `json:"recoverable"`
	Usage       *Usage          `json:"usage"`
	Message     string          `json:"message"` // notice

	TotalInputTokens      int64   `json:"totalInputTokens"`
	TotalOutputTokens     int64   `json:"totalOutputTokens"`
	TotalCacheReadTokens  int64   `json:"totalCacheReadTokens"`
	TotalCacheWriteTokens int64   `json:"totalCacheWriteTokens"`
	TotalCost             float64 `json:"totalCost"`
}

func (p *Parser) line(line []byte, oversize bool) {
	if oversize {
		p.mu.Lock()
		p.s.Lines++
		p.s.OversizeLines++
		p.mu.Unlock()
		return
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var w wire
	ok := line[0] == '{' && json.Unmarshal(line, &w) == nil
	p.mu.Lock()
	p.s.Lines++
	if !ok {
		p.s.NonJSONLines++
		if p.s.NonJSONSample == "" {
			p.s.NonJSONSample = capTo(stripANSI(string(line)), 200)
		}
		p.mu.Unlock()
		return
	}
	p.s.JSONLines++
	ev := p.s.apply(&w)
	p.mu.Unlock()
	if p.OnEvent != nil {
		p.OnEvent(ev)
	}
}

// apply folds one parsed line into the summary and returns its Event. Caller holds the lock.
func (s *Summary) apply(w *wire) Event {
	ev := Event{Type: w.Type, HookEventName: w.HookEventName}
	s.LastEvent = w.Type
	switch w.Type {
	case "run_result":
		text, cut := capText(w.Text, MaxTextBytes)
		s.Result = &Result{
			FinishReason: w.FinishReason, Text: text, Truncated: cut, Iterations: w.Iterations,
			Usage: w.Usage, AggregateUsage: w.AggregateUsage, DurationMs: w.DurationMs, Model: w.Model,
		}
		ev.Reason, ev.Text = w.FinishReason, short(w.Text)
	case "run_aborted":
		msg, _ := w.Message.(string)
		s.Aborted = &Aborted{Reason: w.Reason, Message: capMessage(msg)}
		ev.Reason, ev.Text = w.Reason, short(msg)
	case "error":
		msg := messageText(w.Message)
		s.TopErrors = keepLast(s.TopErrors, capMessage(msg))
		ev.Text = short(msg)
	case "agent_event":
		if w.Event != nil {
			s.applyAgent(w.Event, &ev)
			s.LastEvent = "agent_event/" + w.Event.Type
		}
	case "hook_event":
		s.LastEvent = "hook_event/" + w.HookEventName
	}
	return ev
}

func (s *Summary) applyAgent(e *wireEvent, ev *Event) {
	ev.EventType, ev.ContentType, ev.ToolName = e.Type, e.ContentType, e.ToolName
	ev.Iteration = e.Iteration
	switch e.Type {
	case "iteration_start":
		s.Iteration = e.Iteration
	case "content_start":
		ev.Text = short(e.Text)
		if e.ContentType == "tool" {
			s.ToolCalls++
			if !containsString(s.Tools, e.ToolName) && len(s.Tools) < maxDistinct {
				s.Tools = append(s.Tools, e.ToolName)
			}
		}
	case "content_end":
		switch e.ContentType {
		case "text":
			s.LastText, s.LastTextTruncated = capText(e.Text, MaxTextBytes)
			ev.Text = short(e.Text)
		case "tool":
			msg, failed := toolError(e.Error)
			succeeded := !failed
			if !failed {
				msg, failed, succeeded = e.Output.outcome()
			}
			if failed {
				s.FailedToolCalls++
				s.FailedTools = countTool(s.FailedTools, e.ToolName)
				s.LastToolError = capTo(msg, 512)
				ev.Error = short(msg)
			}
			if succeeded {
				s.Successes = countTool(s.Successes, e.ToolName)
				if IsMutatingTool(e.ToolName) {
					s.MutatingSuccesses = countTool(s.MutatingSuccesses, e.ToolName)
				}
			}
		}
	case "usage":
		s.Usage = &Usage{
			InputTokens: e.TotalInputTokens, OutputTokens: e.TotalOutputTokens,
			CacheReadTokens: e.TotalCacheReadTokens, CacheWriteTokens: e.TotalCacheWriteTokens,
			TotalCost: e.TotalCost,
		}
		u := *s.Usage
		ev.Usage = &u
	case "error":
		var obj struct {
			Message string `json:"message"`
		}
		msg := ""
		if json.Unmarshal(e.Error, &obj) == nil {
			msg = obj.Message
		} else {
			msg = string(e.Error)
		}
		recoverable := e.Recoverable != nil && *e.Recoverable
		s.ErrorCount++
		s.Errors = keepLastErr(s.Errors, AgentError{
			Message: capMessage(msg), ErrorClass: e.ErrorClass, Recoverable: recoverable, Iteration: e.Iteration,
		})
		ev.Text = short(msg)
	case "done":
		text, cut := capText(e.Text, MaxTextBytes)
		s.Done = &Done{Reason: e.Reason, Text: text, Truncated: cut, Iterations: e.Iterations, Usage: e.Usage}
		ev.Reason, ev.Text = e.Reason, short(e.Text)
	case "notice":
		ev.Text = short(e.Message)
	}
}

// toolError extracts the failure of a content_end tool line: `error` is the JSON string of the
// output, whose own `error` member is the readable message (b_edit_autoapprove_false).
func toolError(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return string(raw), true
	}
	if s == "" {
		return "", false
	}
	var inner struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(s), &inner) == nil && inner.Error != "" {
		return inner.Error, true
	}
	return s, true
}

// toolOp is one operation of a tool's output. 3.0.65's list tools (run_commands, read_files,
// search_codebase, fetch_web_content) answer with an array of them, editor with one; a failed
// operation is success:false with an error text and no top-level error on the line
// (y_run_commands_mixed: `{"query":"false","result":"[Command exited with code 1]",
// "error":"Command exited with code 1","success":false}`).
type toolOp struct {
	Query   string `json:"query"`
	Result  string `json:"result"`
	Error   string `json:"error"`
	Success *bool  `json:"success"`
}

// toolOutput is a content_end tool output reduced to its operations. Any other shape (a string,
// a denial's {"error":…}, nothing) leaves it empty; decoding it never fails the line.
type toolOutput struct{ ops []toolOp }

func (o *toolOutput) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '[':
		var raw []json.RawMessage
		if json.Unmarshal(b, &raw) != nil {
			return nil
		}
		for _, r := range raw {
			var op toolOp
			if json.Unmarshal(r, &op) == nil && op.Success != nil {
				o.ops = append(o.ops, op)
			}
		}
	case '{':
		var op toolOp
		if json.Unmarshal(b, &op) == nil && op.Success != nil {
			o.ops = append(o.ops, op)
		}
	}
	return nil
}

// outcome says whether any operation failed (and the first failure as "<query>: <error>"), and
// whether anything may have succeeded: an output without known operations counts as a success,
// as it did before tool outputs were read.
func (o toolOutput) outcome() (msg string, failed, succeeded bool) {
	if len(o.ops) == 0 {
		return "", false, true
	}
	for _, op := range o.ops {
		if *op.Success {
			succeeded = true
			continue
		}
		if !failed {
			failed = true
			why := op.Error
			if why == "" {
				why = op.Result
			}
			msg = why
			if op.Query != "" {
				msg = op.Query + ": " + why
			}
		}
	}
	return msg, failed, succeeded
}

func messageText(m any) string {
	switch v := m.(type) {
	case string:
		return v
	case nil:
		return ""
	case map[string]any:
		if s, ok := v["message"].(string); ok {
			return s
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func short(s string) string { return capTo(s, 256) }

func keepLast(list []string, s string) []string {
	if len(list) == maxKept {
		copy(list, list[1:])
		list = list[:maxKept-1]
	}
	return append(list, s)
}

func keepLastErr(list []AgentError, e AgentError) []AgentError {
	if len(list) == maxKept {
		copy(list, list[1:])
		list = list[:maxKept-1]
	}
	return append(list, e)
}

func countTool(list []ToolCount, name string) []ToolCount {
	for i := range list {
		if list[i].Name == name {
			list[i].Count++
			return list
		}
	}
	if len(list) >= maxDistinct {
		return list
	}
	return append(list, ToolCount{Name: name, Count: 1})
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s Summary) clone() Summary {
	c := s
	if s.Result != nil {
		r := *s.Result
		r.Usage, r.AggregateUsage, r.Model = cloneUsage(r.Usage), cloneUsage(r.AggregateUsage), cloneModel(r.Model)
		c.Result = &r
	}
	if s.Done != nil {
		d := *s.Done
		d.Usage = cloneUsage(d.Usage)
		c.Done = &d
	}
	if s.Aborted != nil {
		a := *s.Aborted
		c.Aborted = &a
	}
	c.Errors = cloneSlice(s.Errors)
	c.TopErrors = cloneSlice(s.TopErrors)
	c.Tools = cloneSlice(s.Tools)
	c.FailedTools = cloneSlice(s.FailedTools)
	c.MutatingSuccesses = cloneSlice(s.MutatingSuccesses)
	c.Successes = cloneSlice(s.Successes)
	c.Usage = cloneUsage(s.Usage)
	return c
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func cloneUsage(u *Usage) *Usage {
	if u == nil {
		return nil
	}
	c := *u
	return &c
}

func cloneModel(m *Model) *Model {
	if m == nil {
		return nil
	}
	c := *m
	return &c
}
