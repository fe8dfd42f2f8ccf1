package acp

import (
	"encoding/json"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// Turn is what one session/prompt produced. Every list is bounded; Text is capped at
// cline.MaxTextBytes (Truncated counts the rest).
type Turn struct {
	SessionID string
	// StopReason is the agent's: end_turn, cancelled (our cancel, or Cline's abort after
	// repeated rejected calls, docs/acp.md §5), max_turn_requests, max_tokens, refusal; "" when none came.
	StopReason string
	// Text is the agent's message of the turn's last iteration (the answer).
	Text       string
	Truncated  int
	Iterations int
	// Tools counts the tool calls as the --json parser does (calls, failures, successes).
	Tools cline.Summary
	// Rejected lists every call the policy rejected, in order (at most maxRejected).
	Rejected []Rejection
	// Cancelled / TimedOut: the turn's ctx ended (cancel / deadline) and the engine stopped it.
	Cancelled, TimedOut bool
	// DroppedEvents counts progress events not delivered because onEvent fell behind.
	DroppedEvents int
}

// Rejection is one tool call the policy rejected.
type Rejection struct {
	Tool   string `json:"tool"`
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Reason string `json:"reason"`
}

// Limits of a turn's state.
const (
	maxRejected = 64
	maxTracked  = 4096
)

// toolState is what the engine remembers of one tool call id.
type toolState struct {
	name    string
	started bool
	ended   bool
	vague   bool // ended failed without a reason yet
	called  bool // its tool_call arrived: the execution phase (after the permission phase)
}

// turnState accumulates one turn. update runs on the SDK's notification goroutine, decide on
// request goroutines, Prompt on the caller's: everything is under mu, and onEvent runs on a
// delivery goroutine of its own, in order.
type turnState struct {
	onEvent   func(cline.Event)
	evCh      chan cline.Event
	delivered chan struct{}

	mu        sync.Mutex
	t         Turn
	text      strings.Builder
	needIter  bool // a tool ended since the last iteration started
	tools     map[string]*toolState
	cancelled bool
	cancelCh  chan struct{}
	closed    bool // no more events
}

func newTurnState(id string, onEvent func(cline.Event)) *turnState {
	return &turnState{onEvent: onEvent, t: Turn{SessionID: id}, tools: map[string]*toolState{}, cancelCh: make(chan struct{})}
}

// maxQueued bounds the events waiting for onEvent; beyond it events are dropped (and counted),
// so a slow onEvent never stalls the SDK's notification queue, which drops the whole connection
// when 1024 notifications wait.
const maxQueued = 1024

// start runs the delivery of events to onEvent on its own goroutine.
func (ts *turnState) start() {
	if ts.onEvent == nil {
		return
	}
	ts.evCh, ts.delivered = make(chan cline.Event, maxQueued), make(chan struct{})
	go func() {
		defer close(ts.delivered)
		for e := range ts.evCh {
			ts.onEvent(e)
		}
	}()
}

// finish stops accepting events and waits until onEvent has seen every queued one.
func (ts *turnState) finish() {
	ts.mu.Lock()
	if !ts.closed && ts.evCh != nil {
		close(ts.evCh)
	}
	ts.closed = true
	ts.mu.Unlock()
	if ts.delivered != nil {
		<-ts.delivered
	}
}

// push queues events without blocking (caller holds mu).
func (ts *turnState) push(evs []cline.Event) {
	if ts.evCh == nil || ts.closed {
		return
	}
	for _, e := range evs {
		select {
		case ts.evCh <- e:
		default:
			ts.t.DroppedEvents++
		}
	}
}

func (ts *turnState) emit(evs []cline.Event) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.push(evs)
}

// iteration starts the next iteration (caller holds mu) and returns its event.
func (ts *turnState) iteration() cline.Event {
	ts.t.Iterations++
	ts.needIter = false
	ts.text.Reset()
	ts.t.Truncated = 0
	return cline.Event{Type: "agent_event", EventType: "iteration_start", Iteration: ts.t.Iterations}
}

// update folds one session/update into the turn and reports it as --json-shaped events.
func (ts *turnState) update(u sdk.SessionUpdate) {
	ts.mu.Lock()
	var evs []cline.Event
	switch {
	case u.AgentMessageChunk != nil:
		if txt := blockText(u.AgentMessageChunk.Content); txt != "" {
			evs = ts.textChunk(evs, txt, "text")
		}
	case u.AgentThoughtChunk != nil:
		if txt := blockText(u.AgentThoughtChunk.Content); txt != "" {
			evs = ts.textChunk(evs, txt, "reasoning")
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		evs = ts.tool(evs, string(tc.ToolCallId), &tc.Title, string(tc.Status), tc.RawOutput, false)
	case u.ToolCallUpdate != nil:
		tc := u.ToolCallUpdate
		status := ""
		if tc.Status != nil {
			status = string(*tc.Status)
		}
		evs = ts.tool(evs, string(tc.ToolCallId), tc.Title, status, tc.RawOutput, true)
	}
	ts.push(evs)
	ts.mu.Unlock()
}

func (ts *turnState) textChunk(evs []cline.Event, txt, kind string) []cline.Event {
	if ts.needIter {
		evs = append(evs, ts.iteration())
	}
	if kind == "text" {
		if room := cline.MaxTextBytes - ts.text.Len(); room >= len(txt) {
			ts.text.WriteString(txt)
		} else {
			kept := capRaw(txt, max(room, 0))
			ts.text.WriteString(kept)
			ts.t.Truncated += len(txt) - len(kept)
		}
	}
	return append(evs, cline.Event{Type: "agent_event", EventType: "content_start", ContentType: kind, Text: capTo(txt, 256), Iteration: ts.t.Iterations})
}

// tool handles tool_call and tool_call_update. Cline sends updates for an id before the
// tool_call that creates it (docs/acp.md §7), so whichever names the tool first starts it, and a call
// ends once, at its first failed/completed status; a later failed update with an output only
// refines the error (a rejection: failed, then tool_call, then failed with the reason). A
// pending tool_call_update with a title for an ended id is a new call that reuses the id.
func (ts *turnState) tool(evs []cline.Event, id string, title *string, status string, out any, isUpdate bool) []cline.Event {
	st := ts.tools[id]
	if st != nil && st.ended && isUpdate && status == "pending" && title != nil {
		st = nil
		delete(ts.tools, id)
	}
	if st == nil {
		if len(ts.tools) >= maxTracked {
			return evs
		}
		st = &toolState{}
		ts.tools[id] = st
	}
	if title != nil && st.name == "" {
		st.name = toolName(*title)
		if st.name == "" {
			st.name = "unknown"
		}
	}
	s := &ts.t.Tools
	if !st.started && st.name != "" {
		st.started = true
		if ts.needIter {
			evs = append(evs, ts.iteration())
		}
		s.ToolCalls++
		if !contains(s.Tools, st.name) && len(s.Tools) < 64 {
			s.Tools = append(s.Tools, st.name)
		}
		evs = append(evs, cline.Event{Type: "agent_event", EventType: "content_start", ContentType: "tool", ToolName: st.name, Iteration: ts.t.Iterations})
	}
	if !isUpdate {
		st.called = true
	}
	terminal := status == "failed" || status == "completed"
	if terminal && st.called {
		ts.needIter = true // the call's result goes back to the model: a new iteration follows
	}
	if st.ended {
		if msg, failed := toolFailure(out); failed && status == "failed" && st.vague {
			ts.t.Tools.LastToolError, st.vague = capTo(msg, 512), false
		}
		return evs
	}
	if !terminal {
		return evs
	}
	st.ended = true
	msg, failed := toolFailure(out)
	if status == "failed" && !failed {
		failed, msg, st.vague = true, "the tool call failed", true
	}
	name := orUnknown(st.name)
	if failed {
		s.FailedToolCalls++
		s.FailedTools = countTool(s.FailedTools, name)
		s.LastToolError = capTo(msg, 512)
	} else {
		s.Successes = countTool(s.Successes, name)
		if cline.IsMutatingTool(name) {
			s.MutatingSuccesses = countTool(s.MutatingSuccesses, name)
		}
	}
	ev := cline.Event{Type: "agent_event", EventType: "content_end", ContentType: "tool", ToolName: name, Iteration: ts.t.Iterations}
	if failed {
		ev.Error = capTo(msg, 256)
	}
	return append(evs, ev)
}

// toolFailure reads a rawOutput: {"error":...}, the JSON string of such an object (a rejection,
// docs/acp.md §5), or a list of operations with success:false (run_commands, read_files).
func toolFailure(out any) (string, bool) {
	switch v := out.(type) {
	case string:
		var inner any
		if json.Unmarshal([]byte(v), &inner) == nil {
			if _, isStr := inner.(string); !isStr {
				return toolFailure(inner)
			}
		}
		return "", false
	case map[string]any:
		if e, ok := v["error"].(string); ok && e != "" {
			return e, true
		}
		if ok, isBool := v["success"].(bool); isBool && !ok {
			return opError(v), true
		}
	case []any:
		for _, op := range v {
			if m, ok := op.(map[string]any); ok {
				if okv, isBool := m["success"].(bool); isBool && !okv {
					return opError(m), true
				}
			}
		}
	}
	return "", false
}

func opError(m map[string]any) string {
	why, _ := m["error"].(string)
	if why == "" {
		why, _ = m["result"].(string)
	}
	if q, _ := m["query"].(string); q != "" {
		return q + ": " + why
	}
	return why
}

// reject records a rejected call.
func (ts *turnState) reject(c ToolCall, reason string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.t.Rejected) < maxRejected {
		ts.t.Rejected = append(ts.t.Rejected, Rejection{Tool: c.Tool, Kind: c.Kind, Title: c.Title, Reason: capTo(reason, 512)})
	}
}

// cancel marks the turn cancelled and releases every pending permission decision. Idempotent.
func (ts *turnState) cancel() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if !ts.cancelled {
		ts.cancelled = true
		close(ts.cancelCh)
	}
}

func (ts *turnState) isCancelled() bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.cancelled
}

// snapshot returns the turn so far, sharing nothing with the state.
func (ts *turnState) snapshot() Turn {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.t
	t.Text = ts.text.String()
	t.Rejected = append([]Rejection(nil), ts.t.Rejected...)
	t.Tools.Tools = append([]string(nil), ts.t.Tools.Tools...)
	t.Tools.FailedTools = append([]cline.ToolCount(nil), ts.t.Tools.FailedTools...)
	t.Tools.Successes = append([]cline.ToolCount(nil), ts.t.Tools.Successes...)
	t.Tools.MutatingSuccesses = append([]cline.ToolCount(nil), ts.t.Tools.MutatingSuccesses...)
	return t
}

func blockText(b sdk.ContentBlock) string {
	if b.Text != nil {
		return b.Text.Text
	}
	return ""
}

func countTool(list []cline.ToolCount, name string) []cline.ToolCount {
	for i := range list {
		if list[i].Name == name {
			list[i].Count++
			return list
		}
	}
	if len(list) >= 64 {
		return list
	}
	return append(list, cline.ToolCount{Name: name, Count: 1})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// capRaw cuts s to at most n bytes on a rune boundary, without a marker.
func capRaw(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && (s[n]&0xc0) == 0x80 {
		n--
	}
	return s[:n]
}
