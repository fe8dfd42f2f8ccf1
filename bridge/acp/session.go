package acp

import (
	"context"
	"errors"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// Message is one message of a session's history as a load replayed it.
type Message struct {
	Role string `json:"role"` // user | agent
	Text string `json:"text"`
}

// Limits of the replayed history a Session keeps.
const (
	maxHistory     = 256
	maxHistoryText = 16 << 10
)

// Session is one conversation on a Conn. One turn runs at a time.
type Session struct {
	c      *Conn
	id     string
	policy Policy

	mu      sync.Mutex
	loading bool
	history []Message
	turn    *turnState
}

func newSession(c *Conn, id string, policy Policy) *Session {
	return &Session{c: c, id: id, policy: policy}
}

// ID is the agent's session id: the handle for LoadSession in a later process.
func (s *Session) ID() string { return s.id }

// History returns the messages the agent replayed when the session was loaded.
func (s *Session) History() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.history...)
}

// SetModel selects the model for the next turns (session/set_config_option configId "model";
// the CLI takes any string, docs/acp.md §1).
func (s *Session) SetModel(ctx context.Context, model string) error {
	_, err := call(ctx, func(ctx context.Context) (sdk.SetSessionConfigOptionResponse, error) {
		return s.c.sdk.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
			SessionId: sdk.SessionId(s.id), ConfigId: "model", Value: sdk.SessionConfigValueId(model),
		}})
	})
	if err != nil {
		return s.c.wrap("session/set_config_option model", err)
	}
	return nil
}

// SetPolicy replaces the policy that answers the session's permission requests: a session
// opened before the call that takes it (a spare's, opened with none) gets the call's before the
// call's first prompt.
func (s *Session) SetPolicy(policy Policy) {
	s.mu.Lock()
	s.policy = policy
	s.mu.Unlock()
}

// Close forgets the session on this connection (the agent keeps it on disk for a later load).
func (s *Session) Close() { s.c.forget(s.id) }

// update routes one session/update: a load's replay goes to the history, a turn's updates to
// the turn; anything else is dropped.
func (s *Session) update(u sdk.SessionUpdate) {
	s.mu.Lock()
	if s.loading {
		s.replay(u)
		s.mu.Unlock()
		return
	}
	ts := s.turn
	s.mu.Unlock()
	if ts != nil {
		ts.update(u)
	}
}

// replay appends a replayed chunk to the history (caller holds mu); consecutive chunks of one
// role form one message.
func (s *Session) replay(u sdk.SessionUpdate) {
	role, text := "", ""
	switch {
	case u.UserMessageChunk != nil:
		role, text = "user", blockText(u.UserMessageChunk.Content)
	case u.AgentMessageChunk != nil:
		role, text = "agent", blockText(u.AgentMessageChunk.Content)
	default:
		return
	}
	if n := len(s.history); n > 0 && s.history[n-1].Role == role {
		s.history[n-1].Text = capRaw(s.history[n-1].Text+text, maxHistoryText)
		return
	}
	if len(s.history) < maxHistory {
		s.history = append(s.history, Message{Role: role, Text: capRaw(text, maxHistoryText)})
	}
}

// decide runs the policy for a permission request of this session. ok is false when the answer
// must be "cancelled": no turn is running, the turn is being cancelled, or the connection ended.
func (s *Session) decide(ctx context.Context, call ToolCall) (Decision, bool) {
	s.mu.Lock()
	ts, policy := s.turn, s.policy
	s.mu.Unlock()
	if ts == nil || ts.isCancelled() {
		return Decision{}, false
	}
	if policy == nil {
		d := Decision{Reason: "denied by policy: this run allows no tool; do not retry"}
		ts.reject(call, d.Reason)
		return d, true
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan Decision, 1)
	go func() { ch <- policy(pctx, call) }()
	var d Decision
	select {
	case d = <-ch:
	case <-ts.cancelCh:
		return Decision{}, false
	case <-ctx.Done():
		return Decision{}, false
	}
	if ts.isCancelled() {
		return Decision{}, false
	}
	if !d.Allow {
		ts.reject(call, d.Reason)
	}
	return d, true
}

type promptResult struct {
	resp sdk.PromptResponse
	err  error
}

// Prompt runs one turn. onEvent (may be nil) receives progress in the shape of the --json
// parser's events, on the connection's reader goroutine: it must not block. When ctx ends, the
// turn is stopped: session/cancel, pending permissions answered "cancelled", CancelGrace for the
// stopReason, else stdin closed (ErrUnresponsive: kill the process). The Turn is filled in
// every case; the error is a provider failure (*RPCError), ErrConnectionLost, ErrUnresponsive or
// ErrTurnActive. A cancelled turn with a stopReason returns a nil error and Turn.Cancelled or
// Turn.TimedOut set.
func (s *Session) Prompt(ctx context.Context, text string, onEvent func(cline.Event)) (Turn, error) {
	ts := newTurnState(s.id, onEvent)
	s.mu.Lock()
	if s.turn != nil {
		s.mu.Unlock()
		return Turn{SessionID: s.id}, ErrTurnActive
	}
	s.turn = ts
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.turn = nil
		s.mu.Unlock()
	}()
	ts.start()
	defer ts.finish()
	ts.mu.Lock()
	ts.push([]cline.Event{ts.iteration()})
	ts.mu.Unlock()

	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer pcancel()
	done := make(chan promptResult, 1)
	go func() {
		r, err := s.c.sdk.Prompt(pctx, sdk.PromptRequest{SessionId: sdk.SessionId(s.id), Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
		done <- promptResult{r, err}
	}()
	var r promptResult
	select {
	case r = <-done:
	case <-ctx.Done():
		r = s.stop(ts, done, pcancel)
		ts.mu.Lock()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			ts.t.TimedOut = true
		} else {
			ts.t.Cancelled = true
		}
		ts.mu.Unlock()
	}
	t := ts.snapshot()
	if r.err != nil {
		return t, s.c.wrap("session/prompt", r.err)
	}
	t.StopReason = capTo(string(r.resp.StopReason), 64)
	s.c.emitEnd(ts, t)
	ts.finish()
	t.DroppedEvents = ts.snapshot().DroppedEvents
	return t, nil
}

// stop cancels the running turn: session/cancel first, then every pending permission request
// is answered "cancelled" (the order the ACP spec gives and the CLI was observed with, docs/acp.md §6),
// then it waits CancelGrace for the prompt's answer; without one it closes stdin and reports
// ErrUnresponsive when the stream does not end either.
func (s *Session) stop(ts *turnState, done <-chan promptResult, pcancel context.CancelFunc) promptResult {
	grace, cancelGrace := context.WithTimeout(context.Background(), s.c.opts.CancelGrace)
	defer cancelGrace()
	sent := make(chan struct{})
	go func() {
		_ = s.c.sdk.Cancel(context.Background(), sdk.CancelNotification{SessionId: sdk.SessionId(s.id)})
		close(sent)
	}()
	select {
	case <-sent:
	case <-grace.Done():
	}
	ts.cancel()
	select {
	case r := <-done:
		return r
	case <-grace.Done():
	}
	err := s.c.Close()
	pcancel()
	if err == nil {
		err = ErrConnectionLost
	}
	return promptResult{err: err}
}

// emitEnd reports the turn's end like the --json run_result line.
func (c *Conn) emitEnd(ts *turnState, t Turn) {
	reason := t.StopReason
	if reason == "end_turn" {
		reason = "completed"
	}
	ts.emit([]cline.Event{{Type: "run_result", Reason: reason, Text: capTo(t.Text, 256)}})
}
