package acp

import (
	"context"
	"strings"
	"testing"
	"time"
)

func execCall(cmd string) ToolCall {
	return ToolCall{ID: "t1", Kind: "execute", Tool: "run_commands", Title: "run_commands: " + cmd, Input: []byte(`{"commands":["` + cmd + `"]}`)}
}

// TestAskCommandsThreeValued: with commands left to the user, the edits policy answers three
// ways: allow (an edit), reject without asking (a git ref move), ask (any other command).
func TestAskCommandsThreeValued(t *testing.T) {
	p := AskCommands(Edits())
	edit := ToolCall{ID: "e", Kind: "edit", Tool: "editor", Title: `editor: {"path":"a"}`, Input: []byte(`{"path":"a"}`)}
	for _, c := range []struct {
		call       ToolCall
		allow, ask bool
		reason     string
	}{
		{edit, true, false, ""},
		{execCall("touch marker"), false, true, ""},
		{execCall("git status"), false, true, ""},
		{execCall("git commit -qm x"), false, false, "denied by policy: git commit"},
		{ToolCall{Kind: "execute", Tool: "run_commands", Title: "run_commands: ?"}, false, false, "cannot be read"},
	} {
		d := p(context.Background(), c.call)
		if d.Allow != c.allow || d.Ask != c.ask || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s: %+v, want allow %v ask %v reason ~%q", c.call.Title, d, c.allow, c.ask, c.reason)
		}
	}
	if d := AskCommands(ReadOnly(false))(context.Background(), execCall("ls")); d.Allow || d.Ask {
		t.Errorf("read-only policy without commands: %+v, want a rejection without asking", d)
	}
}

// TestResolve: Resolve puts only the calls the policy leaves open to the asker, takes its answer,
// rejects with a reason when nobody can be asked or nobody answers in time, and the decision of a
// resolved policy is never Ask.
func TestResolve(t *testing.T) {
	base := AskCommands(Edits())
	asked := 0
	yes := func(context.Context, ToolCall) Decision { asked++; return Decision{Allow: true} }
	no := func(context.Context, ToolCall) Decision { asked++; return Decision{} }
	silent := func(ctx context.Context, _ ToolCall) Decision { asked++; <-ctx.Done(); return Decision{} }
	ctx := context.Background()
	if d := Resolve(base, yes, time.Minute)(ctx, execCall("touch m")); !d.Allow || d.Ask || asked != 1 {
		t.Errorf("accepted: %+v after %d questions", d, asked)
	}
	if d := Resolve(base, yes, time.Minute)(ctx, execCall("git push")); d.Allow || asked != 1 {
		t.Errorf("a ref move was put to the user or allowed: %+v, %d questions", d, asked)
	}
	if d := Resolve(base, no, time.Minute)(ctx, execCall("touch m")); d.Allow || d.Ask || !strings.Contains(d.Reason, "denied by the user; do not retry") {
		t.Errorf("declined: %+v", d)
	}
	if d := Resolve(base, nil, time.Minute)(ctx, execCall("touch m")); d.Allow || d.Ask || !strings.Contains(d.Reason, "no way to ask the user; do not retry") {
		t.Errorf("no asker: %+v", d)
	}
	if d := Resolve(base, silent, 20*time.Millisecond)(ctx, execCall("touch m")); d.Allow || d.Ask || !strings.Contains(d.Reason, "nobody answered the permission request for run_commands within 20ms; do not retry") {
		t.Errorf("unanswered: %+v", d)
	}
	if asked != 3 {
		t.Errorf("%d questions, want 3 (nobody to ask is no question)", asked)
	}
	// A turn that ends while the question waits ends the wait (the session answers "cancelled").
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if d := Resolve(base, silent, time.Hour)(cctx, execCall("touch m")); d.Allow {
		t.Errorf("cancelled turn: %+v", d)
	}
	if d := Resolve(Edits(), silent, time.Hour)(ctx, execCall("touch m")); !d.Allow || asked != 4 {
		t.Errorf("without AskCommands a command is the policy's: %+v (%d questions)", d, asked)
	}
}
