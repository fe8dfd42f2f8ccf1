package acp

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Asker puts a tool call to a person and returns their decision (Allow, or a rejection with its
// reason). It must return soon after ctx ends: Resolve's timeout and the turn's cancel end it.
type Asker func(ctx context.Context, call ToolCall) Decision

// ErrNoAsker is the reason of a call the policy put to the user when nobody can be asked.
var ErrNoAsker = errors.New("no way to ask the user")

// AskCommands makes base put its allowed commands to the user: a run_commands call base allows
// (for Edits: one whose git invocations cannot move a ref) becomes Ask; a call base rejects stays
// rejected without asking, and every other decision is base's.
func AskCommands(base Policy) Policy {
	return func(ctx context.Context, c ToolCall) Decision {
		var d Decision
		if base != nil {
			d = base(ctx, c)
		}
		if d.Allow && (c.Kind == "execute" || c.Tool == "run_commands") {
			return Decision{Ask: true}
		}
		return d
	}
}

// Resolve answers the calls p leaves to a person through ask, each within timeout: an answer is
// the decision; no asker, an asker that could not ask, or no answer in time is a rejection whose
// reason says why. The turn's own end (ctx) still wins: Session.decide answers "cancelled" then.
func Resolve(p Policy, ask Asker, timeout time.Duration) Policy {
	if p == nil {
		return nil
	}
	return func(ctx context.Context, c ToolCall) Decision {
		d := p(ctx, c)
		if !d.Ask {
			return d
		}
		if ask == nil {
			return Decision{Reason: fmt.Sprintf("denied: the policy leaves %s to the user, and there is %s; do not retry", orUnknown(c.Tool), ErrNoAsker)}
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		d = ask(actx, c)
		d.Ask = false
		if d.Allow {
			return d
		}
		if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return Decision{Reason: fmt.Sprintf("denied: nobody answered the permission request for %s within %s; do not retry", orUnknown(c.Tool), timeout)}
		}
		if d.Reason == "" {
			d.Reason = "denied by the user; do not retry"
		}
		return d
	}
}

// Commands is the command lines of an execute call (run_commands' rawInput), for a question to a
// person; nil when they cannot be read.
func Commands(c ToolCall) []string {
	cmds, _ := commands(c.Input)
	return cmds
}
