package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// steered runs a turn per waiting steer message after a turn that ended by itself, and folds
// them into one: the answer of each turn, in order, the tool counts and rejections of all.
func steered(ctx context.Context, t Turn, sess *acp.Session, at acp.Turn, err error) (acp.Turn, error) {
	if t.Steer == nil {
		return at, err
	}
	for err == nil && !at.Cancelled && !at.TimedOut && at.StopReason != "" && ctx.Err() == nil {
		msg, ok := t.Steer()
		if !ok {
			break
		}
		t.Progress("steer message delivered as the next turn: " + snippet(t.Red.Text(msg), 100))
		next, nerr := sess.Prompt(ctx, msg, t.Event)
		at, err = mergeTurns(at, next, msg), nerr
	}
	return at, err
}

// mergeTurns folds a steered turn into the turns before it.
func mergeTurns(t, next acp.Turn, msg string) acp.Turn {
	out := next
	out.Text = t.Text + "\n\n[steer message: " + snippet(msg, 80) + "]\n\n" + next.Text
	out.Iterations += t.Iterations
	out.DroppedEvents += t.DroppedEvents
	out.Rejected = append(slices.Clone(t.Rejected), next.Rejected...)
	s, n := t.Tools, next.Tools
	s.ToolCalls += n.ToolCalls
	s.FailedToolCalls += n.FailedToolCalls
	for _, name := range n.Tools {
		if !slices.Contains(s.Tools, name) {
			s.Tools = append(s.Tools, name)
		}
	}
	s.FailedTools = addCounts(s.FailedTools, n.FailedTools)
	s.Successes = addCounts(s.Successes, n.Successes)
	s.MutatingSuccesses = addCounts(s.MutatingSuccesses, n.MutatingSuccesses)
	if n.LastToolError != "" {
		s.LastToolError = n.LastToolError
	}
	out.Tools = s
	return out
}

func addCounts(into, more []cline.ToolCount) []cline.ToolCount {
	into = slices.Clone(into)
	for _, c := range more {
		i := slices.IndexFunc(into, func(x cline.ToolCount) bool { return x.Name == c.Name })
		if i < 0 {
			into = append(into, c)
			continue
		}
		into[i].Count += c.Count
	}
	return into
}

// snippet is the first n runes of s on one line.
func snippet(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}
