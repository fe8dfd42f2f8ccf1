package acp_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

type turnResult struct {
	turn acp.Turn
	err  error
}

func promptAsync(ctx context.Context, s *acp.Session, text string, onEvent func(cline.Event)) <-chan turnResult {
	done := make(chan turnResult, 1)
	go func() {
		t, err := s.Prompt(ctx, text, onEvent)
		done <- turnResult{t, err}
	}()
	return done
}

func wait(t *testing.T, done <-chan turnResult) turnResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("the turn did not end within 60 s")
	}
	return turnResult{}
}

func TestInitializeChecksVersion(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	done := make(chan error, 1)
	go func() { _, err := a.conn.Initialize(t.Context()); done <- err }()
	req := a.expect("initialize")
	if p, _ := req["params"].(map[string]any); p["protocolVersion"] != float64(1) {
		t.Errorf("got params %v, want protocolVersion 1", p)
	}
	a.reply(req, `{"protocolVersion":2,"agentCapabilities":{"loadSession":true},"authMethods":[]}`)
	var pe *acp.ProtocolError
	if err := <-done; !errors.As(err, &pe) {
		t.Errorf("got %v, want a ProtocolError", err)
	}
	if _, err := a.conn.NewSession(t.Context(), "/w", nil); err == nil {
		t.Error("session/new after a failed initialize succeeded")
	}
}

func TestLoadNeedsCapability(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	done := make(chan error, 1)
	go func() { _, err := a.conn.Initialize(t.Context()); done <- err }()
	a.reply(a.expect("initialize"), `{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := a.conn.LoadSession(t.Context(), "1_x_cli", "/w", nil); !errors.Is(err, acp.ErrLoadUnsupported) {
		t.Errorf("got %v, want ErrLoadUnsupported", err)
	}
	select {
	case m := <-a.lines:
		t.Errorf("the engine sent %v although the agent cannot load", m)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestInvalidSessionIDFromAgent(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	done := make(chan error, 1)
	go func() {
		if _, err := a.conn.Initialize(t.Context()); err != nil {
			done <- err
			return
		}
		_, err := a.conn.NewSession(t.Context(), "/w", nil)
		done <- err
	}()
	a.reply(a.expect("initialize"), `{"protocolVersion":1,"authMethods":[]}`)
	a.reply(a.expect("session/new"), `{"sessionId":"../../etc"}`)
	var pe *acp.ProtocolError
	if err := <-done; !errors.As(err, &pe) {
		t.Errorf("got %v, want a ProtocolError for a session id with a path", err)
	}
}

// TestCancelOrder: on cancel the engine sends session/cancel, then answers the pending permission
// request "cancelled" (the order of the ACP spec, and what the real CLI needs, docs/acp.md §6), and the
// turn ends with the agent's stopReason.
func TestCancelOrder(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	policyCtxDone, asked := make(chan struct{}), make(chan struct{})
	s := a.handshake("1_a_cli", func(ctx context.Context, _ acp.ToolCall) acp.Decision {
		close(asked)
		<-ctx.Done()
		close(policyCtxDone)
		return acp.Decision{Allow: true}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := promptAsync(ctx, s, "go", nil)
	prompt := a.expect("session/prompt")
	a.send(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"1_a_cli","toolCall":{"toolCallId":"c1","title":"editor: {}","kind":"edit","status":"pending"},"options":[{"optionId":"allow_once","name":"Allow","kind":"allow_once"},{"optionId":"reject_once","name":"Reject","kind":"reject_once"}]}}`)
	<-asked // the policy is now waiting
	cancel()
	if m := a.expect("session/cancel"); m["params"].(map[string]any)["sessionId"] != "1_a_cli" {
		t.Errorf("got %v", m)
	}
	resp := a.expect("")
	if got := fmt.Sprint(resp["result"]); got != "map[outcome:map[outcome:cancelled]]" || idOf(resp) != "0" {
		t.Errorf("got permission answer %v, want outcome cancelled for id 0", resp)
	}
	<-policyCtxDone
	a.reply(prompt, `{"stopReason":"cancelled"}`)
	r := wait(t, done)
	if r.err != nil || r.turn.StopReason != "cancelled" || !r.turn.Cancelled {
		t.Errorf("got %+v, %v", r.turn, r.err)
	}
}

// TestPermissionAnswers: allow_once for an allowed call, reject_once for a rejected one (never
// allow_always), cancelled without a fitting option, for an unknown session, or outside a turn.
func TestPermissionAnswers(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	s := a.handshake("1_b_cli", acp.ReadOnly(false))
	ask := func(id int, session, title, kind, options string) string {
		a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":%q,"toolCall":{"toolCallId":"c%d","title":%q,"kind":%q},"options":%s}}`, id, session, id, title, kind, options))
		return fmt.Sprint(a.expect("")["result"])
	}
	all := `[{"optionId":"allow_always","name":"A","kind":"allow_always"},{"optionId":"allow_once","name":"a","kind":"allow_once"},{"optionId":"reject_once","name":"r","kind":"reject_once"}]`
	if got := ask(1, "1_b_cli", "read_files: {}", "read", all); got != "map[outcome:map[outcome:cancelled]]" {
		t.Errorf("outside a turn: got %s, want cancelled", got)
	}
	done := promptAsync(t.Context(), s, "go", nil)
	prompt := a.expect("session/prompt")
	for _, tc := range []struct {
		session, title, kind, options, want string
	}{
		{"1_b_cli", "read_files: {}", "read", all, "map[optionId:allow_once outcome:selected]"},
		{"1_b_cli", "editor: {}", "edit", all, "map[optionId:reject_once outcome:selected]"},
		{"1_b_cli", "read_files: {}", "edit", all, "map[optionId:reject_once outcome:selected]"},
		{"1_b_cli", "editor: {}", "read", all, "map[optionId:reject_once outcome:selected]"},
		{"1_b_cli", "apply_patch: {}", "other", all, "map[optionId:reject_once outcome:selected]"},
		{"1_b_cli", "editor: {}", "edit", `[{"optionId":"allow_always","name":"A","kind":"allow_always"}]`, "map[outcome:cancelled]"},
		{"1_b_cli", "read_files: {}", "read", `[]`, "map[outcome:cancelled]"},
		{"9_other_cli", "read_files: {}", "read", all, "map[outcome:cancelled]"},
	} {
		if got := ask(10, tc.session, tc.title, tc.kind, tc.options); got != "map[outcome:"+tc.want+"]" {
			t.Errorf("%s %s (%s): got %s, want %s", tc.session, tc.title, tc.kind, got, tc.want)
		}
	}
	a.reply(prompt, `{"stopReason":"end_turn"}`)
	r := wait(t, done)
	if len(r.turn.Rejected) != 5 || r.turn.Rejected[3].Tool != "apply_patch" || r.turn.Rejected[3].Kind != "other" {
		t.Errorf("got rejections %+v", r.turn.Rejected)
	}
}

// TestToolUpdatesOutOfOrder replays the real order (docs/acp.md §7): update pending, permission, update
// failed, tool_call, update failed with the reason; a reused id after that is a new call.
func TestToolUpdatesOutOfOrder(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	s := a.handshake("1_c_cli", nil)
	var evs []string
	done := promptAsync(t.Context(), s, "go", func(e cline.Event) { evs = append(evs, e.EventType+"/"+e.ContentType+"/"+e.ToolName+"/"+e.Error) })
	prompt := a.expect("session/prompt")
	for range 2 {
		a.send(update("1_c_cli", `{"toolCallId":"same","title":"editor: {\"path\":\"x\"}","kind":"edit","status":"pending","sessionUpdate":"tool_call_update"}`))
		a.send(`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"1_c_cli","toolCall":{"toolCallId":"same","title":"editor: {}","kind":"edit"},"options":[{"optionId":"reject_once","name":"r","kind":"reject_once"}]}}`)
		a.expect("")
		a.send(update("1_c_cli", `{"sessionUpdate":"tool_call_update","toolCallId":"same","status":"failed"}`))
		a.send(update("1_c_cli", `{"sessionUpdate":"tool_call","toolCallId":"same","title":"editor: {}","kind":"edit","status":"pending"}`))
		a.send(update("1_c_cli", `{"sessionUpdate":"tool_call_update","toolCallId":"same","status":"failed","rawOutput":"{\"error\":\"User rejected the tool call\"}"}`))
	}
	a.send(update("1_c_cli", chunk("Gave up.")))
	a.reply(prompt, `{"stopReason":"end_turn"}`)
	r := wait(t, done)
	if r.turn.Tools.ToolCalls != 2 || r.turn.Tools.FailedToolCalls != 2 || r.turn.Tools.LastToolError != "User rejected the tool call" {
		t.Errorf("got tools %+v, want 2 calls, 2 failures, the rejection as last error", r.turn.Tools)
	}
	if r.turn.Iterations != 3 || r.turn.Text != "Gave up." {
		t.Errorf("got iterations %d text %q, want 3 and the last iteration's text", r.turn.Iterations, r.turn.Text)
	}
	want := "iteration_start///|content_start/tool/editor/|content_end/tool/editor/the tool call failed|iteration_start///|content_start/tool/editor/|content_end/tool/editor/the tool call failed|iteration_start///|content_start/text//|///"
	if got := strings.Join(evs, "|"); got != want {
		t.Errorf("got events\n%s\nwant\n%s", got, want)
	}
}

// TestConnectionLost: the agent's stdout ends mid-turn: ErrConnectionLost, and Classify leaves
// the verdict to the process's exit.
func TestConnectionLost(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	s := a.handshake("1_d_cli", nil)
	done := promptAsync(t.Context(), s, "go", nil)
	a.expect("session/prompt")
	a.send(update("1_d_cli", chunk("partial")))
	_ = a.out.Close()
	r := wait(t, done)
	if !errors.Is(r.err, acp.ErrConnectionLost) {
		t.Fatalf("got %v, want ErrConnectionLost", r.err)
	}
	if v := acp.Classify(r.turn, r.err, cline.Outcome{ExitCode: 1}); v.Kind != cline.KindNonZeroExit {
		t.Errorf("exit 1: got %+v", v)
	}
	if v := acp.Classify(r.turn, r.err, cline.Outcome{Signal: "SIGKILL", ExitCode: -1}); v.Kind != cline.KindNonZeroExit || !strings.Contains(v.Message, "SIGKILL") {
		t.Errorf("killed: got %+v", v)
	}
}

func TestOneTurnPerSession(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	s := a.handshake("1_e_cli", nil)
	done := promptAsync(t.Context(), s, "go", nil)
	prompt := a.expect("session/prompt")
	if _, err := s.Prompt(t.Context(), "again", nil); !errors.Is(err, acp.ErrTurnActive) {
		t.Errorf("got %v, want ErrTurnActive", err)
	}
	a.reply(prompt, `{"stopReason":"end_turn"}`)
	if r := wait(t, done); r.err != nil {
		t.Error(r.err)
	}
}

// TestHostileAgent: what a hostile agent sends is bounded or refused: a huge answer is capped,
// thousands of tool ids are bounded, updates for other sessions are dropped, fs/terminal
// requests get an error, garbage lines are skipped.
func TestHostileAgent(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	s := a.handshake("1_f_cli", nil)
	done := promptAsync(t.Context(), s, "go", nil)
	prompt := a.expect("session/prompt")
	a.send("not json at all")
	a.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"1_f_cli","update":{"sessionUpdate":"no_such_kind"}}}`)
	a.send(update("9_other_cli", chunk("not mine")))
	big := strings.Repeat("x", 512<<10)
	for range 3 {
		a.send(update("1_f_cli", chunk(big)))
	}
	a.send(strings.Repeat("y", 9<<20)) // over the line limit: skipped, the connection survives
	for i := range 4096 + 500 {
		a.send(update("1_f_cli", fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":"t%d","title":"editor: {}","kind":"edit","status":"pending"}`, i)))
	}
	for _, method := range []string{"fs/read_text_file", "fs/write_text_file", "terminal/create"} {
		a.send(`{"jsonrpc":"2.0","id":77,"method":"` + method + `","params":{"sessionId":"1_f_cli","path":"/etc/passwd","content":"x","command":"id"}}`)
		if m := a.expect(""); m["error"] == nil {
			t.Errorf("%s: got %v, want an error", method, m)
		}
	}
	a.reply(prompt, `{"stopReason":"end_turn"}`)
	r := wait(t, done)
	if len(r.turn.Text) != cline.MaxTextBytes || r.turn.Truncated != 3*len(big)-cline.MaxTextBytes {
		t.Errorf("got text %d bytes, truncated %d; want the cap", len(r.turn.Text), r.turn.Truncated)
	}
	if r.turn.Tools.ToolCalls != 4096 {
		t.Errorf("got %d tool calls counted, want the 4096 tracked", r.turn.Tools.ToolCalls)
	}
}

// TestFloodNeverHangs: a flood of 5000 chunks with a slow onEvent is processed completely: the
// gate holds the reading back instead of letting the SDK's queue (1024) overflow, which drops
// the connection (before the gate the turn ended with ErrConnectionLost after ~240 chunks).
func TestFloodNeverHangs(t *testing.T) {
	a := newPipeAgent(t, acp.Options{})
	s := a.handshake("1_g_cli", nil)
	done := promptAsync(t.Context(), s, "go", func(cline.Event) { time.Sleep(time.Microsecond) })
	prompt := a.expect("session/prompt")
	go func() {
		for range 5000 {
			if _, err := a.out.Write([]byte(update("1_g_cli", chunk("x")) + "\n")); err != nil {
				return
			}
		}
		_, _ = a.out.Write([]byte(`{"jsonrpc":"2.0","id":` + idOf(prompt) + `,"result":{"stopReason":"end_turn"}}` + "\n"))
	}()
	r := wait(t, done)
	if r.err != nil || r.turn.StopReason != "end_turn" || len(r.turn.Text) != 5000 {
		t.Errorf("got stop %q, err %v, %d bytes of text; want every chunk and end_turn", r.turn.StopReason, r.err, len(r.turn.Text))
	}
	t.Logf("flood: %d progress events dropped by the slow onEvent", r.turn.DroppedEvents)
}

// TestAgentNotReading: an agent that stops reading its stdin blocks the SDK's writes, which do
// not heed ctx; every call still returns when its ctx ends, and Close ends the stuck writes.
func TestAgentNotReading(t *testing.T) {
	a := newPipeAgent(t, acp.Options{CancelGrace: 100 * time.Millisecond, CloseGrace: 100 * time.Millisecond})
	s := a.handshake("1_h_cli", nil)
	close(a.stalled) // from here on nobody reads what the engine writes
	deadline := func() context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	if err := s.SetModel(deadline(), "m"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("set model: got %v, want the deadline", err)
	}
	if _, err := a.conn.NewSession(deadline(), "/w", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("session/new: got %v, want the deadline", err)
	}
	done := promptAsync(deadline(), s, "go", nil)
	r := wait(t, done)
	if !r.turn.TimedOut || r.err == nil {
		t.Errorf("prompt: got %+v, %v; want a timed-out turn with an error", r.turn, r.err)
	}
}
