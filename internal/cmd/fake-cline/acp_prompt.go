package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"
)

// Permission texts of the real CLI (docs/acp.md §5, §6).
const (
	rejectedText  = "User rejected the tool call -- NOT a tool or system failure. Clarify with user before proceeding."
	cancelledText = "Permission request was cancelled -- NOT a tool or system failure. Clarify with user before proceeding."
)

// acpRejectLimit: this many rejected calls in a row end the prompt with stopReason cancelled.
const acpRejectLimit = 5

// acpCancelDelay is how long the real CLI took from session/cancel to the answer (77 ms, docs/acp.md §6).
const acpCancelDelay = 75 * time.Millisecond

// acpRun is one prompt being answered.
type acpRun struct {
	s       *acpSession
	params  url.Values
	prompt  string   // the task: the prompt without cline-mcp's policy block (taskOf)
	full    string   // the whole prompt
	tools   *session // the --json fake's tool runner, bound to the session's cwd
	waited  bool
	rejects int // rejected calls in a row
	calls   int // responses with tool calls so far (unique ids)
}

func (a *acpAgent) prompt(params json.RawMessage) (any, *rpcErr) {
	var p struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"prompt"`
	}
	_ = json.Unmarshal(params, &p)
	s := a.session(p.SessionID)
	if s == nil {
		return nil, &rpcErr{code: -32002, msg: "Resource not found: " + p.SessionID, data: obj{{"uri", p.SessionID}}}
	}
	var text strings.Builder
	for _, b := range p.Prompt {
		text.WriteString(b.Text)
	}
	if !s.begin() {
		return nil, &rpcErr{code: -32603, msg: "Internal error: a prompt is already running in this session"}
	}
	defer s.end()
	name, q := selectScenario(text.String())
	sc, ok := acpScenarios[name]
	if !ok {
		return nil, &rpcErr{code: -32603, msg: "Internal error: fake-cline: unknown scenario " + name}
	}
	s.mu.Lock()
	s.noCancel = q.Get("ignore_cancel") == "true"
	s.addMessage("user", `<user_input mode="act">`+text.String()+`</user_input>`)
	_ = s.save("running")
	s.mu.Unlock()
	tools := newSession()
	tools.cfg, tools.paths, tools.params = &config{}, paths{workDir: s.cwd}, q
	r := &acpRun{s: s, params: q, prompt: taskOf(text.String()), full: text.String(), tools: tools}
	stop, perr := r.play(sc(r))
	s.mu.Lock()
	_ = s.save("idle")
	s.mu.Unlock()
	if perr != nil {
		return nil, perr
	}
	a.notify(s.id, obj{{"sessionUpdate", "session_info_update"}, {"updatedAt", isoNow()}})
	return obj{{"stopReason", stop}}, nil
}

func (s *acpSession) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return false
	}
	s.running, s.cancelled, s.cancelCh = true, false, make(chan struct{})
	return true
}

func (s *acpSession) end() {
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
}

// cancel is session/cancel: the running prompt stops at its next step (a pending permission
// request keeps waiting for the client's answer, as in the real CLI).
func (s *acpSession) cancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running && !s.cancelled && !s.ignoreCancel() {
		s.cancelled = true
		close(s.cancelCh)
	}
}

func (s *acpSession) ignoreCancel() bool { return s.noCancel }

func (s *acpSession) isCancelled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

func (r *acpRun) param(name, def string) string {
	if v := r.params.Get(name); v != "" {
		return v
	}
	return def
}

// play runs the scripted model: like the --json script, a last turn with tool calls repeats (up
// to max_iterations=, default 10), then the model gives up with text.
func (r *acpRun) play(turns []turn) (string, *rpcErr) {
	maxIter := r.tools.intParam("max_iterations", 10)
	for i := 0; ; i++ {
		var t turn
		switch {
		case i < len(turns):
			t = turns[i]
		case len(turns) > 0 && len(turns[len(turns)-1].calls) > 0 && i < maxIter:
			t = turns[len(turns)-1]
		default:
			t = textTurn("Stopped after repeated tool calls.")
		}
		if t.hang && len(t.text) > 0 { // hang after a first chunk (after_events=true)
			if r.say(t) {
				return "cancelled", nil
			}
			t.text = nil
		}
		if r.modelWait(t) {
			return "cancelled", nil
		}
		if t.err != nil {
			return "", providerRPCError(*t.err)
		}
		r.s.mu.Lock()
		r.s.inTok += callInputTokens
		r.s.outTok += callOutputTokens
		r.s.cost += r.tools.floatParam("cost_per_call", 0)
		r.s.mu.Unlock()
		for _, th := range t.reasoning {
			r.s.a.notify(r.s.id, obj{{"sessionUpdate", "agent_thought_chunk"}, {"content", obj{{"type", "text"}, {"text", th}}}})
		}
		if r.say(t) {
			return "cancelled", nil
		}
		if len(t.calls) == 0 {
			return "end_turn", nil
		}
		if stop := r.runCalls(t.calls); stop != "" {
			return stop, nil
		}
	}
}

// modelWait is the model call's latency (delay_ms=, wait_file=, hang); it reports a cancel.
func (r *acpRun) modelWait(t turn) bool {
	wait := time.Duration(r.tools.intParam("delay_ms", envInt("FAKE_CLINE_DELAY_MS", 0))) * time.Millisecond
	if p := r.param("wait_file", ""); p != "" && !r.waited {
		r.waited = true
		for !exists(p) {
			if r.sleep(20 * time.Millisecond) {
				return true
			}
		}
	}
	if t.hang {
		wait = 24 * time.Hour
	}
	return r.sleep(wait)
}

// sleep waits d, or until the prompt is cancelled (then, after the CLI's ~80 ms, true).
func (r *acpRun) sleep(d time.Duration) bool {
	r.s.mu.Lock()
	ch := r.s.cancelCh
	r.s.mu.Unlock()
	if d <= 0 {
		return r.s.isCancelled()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case <-ch:
		time.Sleep(acpCancelDelay)
		return true
	}
}

// say streams the turn's text in 12-byte chunks (gap between chunks with the slow scenario)
// and stores it as the assistant's message.
func (r *acpRun) say(t turn) bool {
	var all strings.Builder
	for _, c := range t.text {
		for _, piece := range chunks(c, 12) {
			if t.gap > 0 && r.sleep(t.gap) {
				return true
			}
			all.WriteString(piece)
			r.s.a.notify(r.s.id, obj{{"sessionUpdate", "agent_message_chunk"}, {"content", obj{{"type", "text"}, {"text", piece}}}})
		}
	}
	if all.Len() > 0 {
		r.s.mu.Lock()
		r.s.addMessage("assistant", all.String())
		r.s.mu.Unlock()
	}
	return false
}

func providerRPCError(pe providerError) *rpcErr {
	code := -32603
	msg := "Internal error: " + pe.message
	if pe.class == "acp_auth" {
		code, msg = -32000, "Authentication required: "+pe.message
	}
	return &rpcErr{code: code, msg: msg, data: obj{{"message", pe.message}}}
}
