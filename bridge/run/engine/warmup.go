package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// A fresh `cline --acp` process answers its first prompt about 100–150 ms slower than one that
// has already sent a request to its provider (the real CLI 3.0.65: its request path has not
// run yet; docs/acp.md). A key-less spare goes through that path before its claim, with nothing
// that could reach the provider: its egress grant is settled without a credential first, so
// the proxy answers the warm-up's one request 403 itself (and the CLI does not retry a 403);
// the grant is settled again afterwards, which drops that refusal, and re-armed with the
// claiming call's credential at the claim. Until then the proxy lends the spare's key to
// nothing. A spare whose key is inside its container is not warmed: its request could reach the
// provider.

// warmUp is what a spare's warm-up turn runs with: the directory and model of the turn that
// filled the spares (a session of its own there, every tool call refused).
type warmUp struct {
	dir   string
	model string
}

// warmUpPrompt is the warm-up's prompt; it never reaches a model.
const warmUpPrompt = "cline-mcp warm-up: reply with the word OK and use no tools."

// warmUpTimeout bounds a warm-up turn (a refused request ends it in well under a second).
const warmUpTimeout = 20 * time.Second

// warmUpOf is the warm-up of t's spares; ok is false when they get none (the key is inside).
func warmUpOf(t Turn) (w warmUp, ok bool) {
	model := t.Model
	if model == "" {
		model = t.Provider.Model
	}
	return warmUp{dir: t.Dir, model: model}, t.Spec.Credential != nil
}

// run warms ag up: its grant disarmed, one turn refused by the proxy, the grant settled again
// (what the warm-up did is not a call's). An error means the spare must not be used.
func (w warmUp) run(ctx context.Context, ag *agent) error {
	if !ag.settles() {
		return errors.New("its egress grant cannot be settled")
	}
	if _, err := ag.settle(ctx, nil); err != nil {
		return fmt.Errorf("disarm its egress grant: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, warmUpTimeout)
	defer cancel()
	sess, err := ag.conn.NewSession(wctx, w.dir, nil) // nil: every tool call refused
	if err != nil {
		return fmt.Errorf("open the warm-up session: %w", err)
	}
	defer sess.Close()
	if w.model != "" {
		if err := sess.SetModel(wctx, w.model); err != nil {
			return fmt.Errorf("select the model: %w", err)
		}
	}
	_, _ = sess.Prompt(wctx, warmUpPrompt, nil) // an error is what the refusal looks like
	if err := wctx.Err(); err != nil {
		return fmt.Errorf("the warm-up turn did not end: %w", err)
	}
	if !ag.alive() {
		return errors.New("the process ended during its warm-up")
	}
	rep, err := ag.settle(ctx, nil)
	if err != nil {
		return fmt.Errorf("settle its egress grant: %w", err)
	}
	if beyond(rep) {
		return fmt.Errorf("the warm-up was answered or reached beyond the proxy: %+v", *rep)
	}
	return nil
}

// beyond reports whether an egress report says the run got anything but refusals.
func beyond(rep *sandbox.EgressReport) bool {
	return rep != nil && (rep.Answers > 0 || rep.SpentUSD > 0 || len(rep.Allowed) > 0)
}
