package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// A fresh `cline --acp` process answers its first prompt about 100–150 ms slower than one that
// has already sent a request to its provider (the real CLI 3.0.65: its request path has not
// run yet; docs/acp.md). A spare goes through that path before its claim, with nothing that
// could reach the provider:
//   - key-less (the egress proxy holds the key): its grant is settled without a credential
//     first, so the proxy answers the warm-up's one request 403 itself (the CLI does not retry a
//     403); the grant is settled again afterwards, which drops that refusal, and re-armed with
//     the claiming call's credential at the claim. Until then the proxy lends its key to nothing.
//   - key inside its container, mounts shared with the host (Spare.Blind; a copying engine's
//     container never sees the host's later writes, so it is not warmed): its settings copy
//     names an address where nothing can listen while the warm-up's session opens — the CLI
//     takes a session's baseUrl from the file when the session opens — and the turn is
//     cancelled once its request was refused (the CLI would retry for a minute); then the host
//     puts the file's own bytes back, which the claiming call's session reads.
//
// A spare that fits neither is not warmed.

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

// blindTurn is how long a blinded warm-up's prompt runs before it is cancelled: the CLI's first
// attempt is refused within tens of milliseconds; cancelled after 50 ms the next turn was only
// partly warm, after 300 ms fully (the real CLI 3.0.65).
const blindTurn = 500 * time.Millisecond

// warmUpOf is the warm-up of t's spares; keyless says the egress proxy holds their key.
func warmUpOf(t Turn) (w warmUp, keyless bool) {
	model := t.Model
	if model == "" {
		model = t.Provider.Model
	}
	return warmUp{dir: t.Dir, model: model}, t.Spec.Credential != nil
}

// spare warms s up as its kind allows and returns it, or nil when a warm-up failed (the spare
// has then been ended: it must not be used).
func (w warmUp) spare(ctx context.Context, s *spare, keyless bool, e *ACP) *spare {
	var err error
	switch {
	case keyless && s.ag.settles(): // a grant that cannot be settled: as it is
		if err = w.run(ctx, s.ag); err == nil {
			s.disarmed = true
		}
	case !keyless && s.blind != nil && s.ag.syncer.Load() == nil:
		err = w.runBlind(ctx, s.ag, s.blind)
	default:
		return s
	}
	if err != nil {
		e.log.Warn("a spare Cline process is not kept: its warm-up failed", "err", err)
		s.end()
		return nil
	}
	s.warmed = true
	return s
}

// openAhead opens the session of s's claiming call before the claim: in the directory every
// claim has (part of the spare's key), with the model of the turn that filled the spares and no
// policy (every tool call refused) until the claim sets the call's; the claim then sends only
// its prompt (agent.takeAhead). Opening a session sends nothing to the provider (the real CLI
// 3.0.65). A spare whose session could not be opened is ended (nil).
func (w warmUp) openAhead(ctx context.Context, s *spare, e *ACP) *spare {
	ctx, cancel := context.WithTimeout(ctx, warmUpTimeout)
	defer cancel()
	sess, err := s.ag.conn.NewSession(ctx, w.dir, nil)
	if err == nil && w.model != "" {
		err = sess.SetModel(ctx, w.model)
	}
	if err != nil {
		e.log.Warn("a spare Cline process is not kept: its session could not be opened", "err", err)
		s.end()
		return nil
	}
	s.ag.ahead, s.ag.aheadModel = sess, w.model
	return s
}

// takeAhead is the session opened ahead for t (a new conversation's first turn in the directory
// it was opened in, with the same model), its policy now t's; ok is false otherwise, and a
// session opened ahead that does not fit is forgotten (the CLI keeps it on disk, unused).
func (ag *agent) takeAhead(t Turn, model string) (sess *acp.Session, ok bool) {
	sess, ag.ahead = ag.ahead, nil
	if sess == nil {
		return nil, false
	}
	if t.SessionID != "" || model != ag.aheadModel {
		sess.Close()
		return nil, false
	}
	sess.SetPolicy(t.Policy)
	return sess, true
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
	if err := w.turn(ctx, ag, warmUpTimeout); err != nil {
		return err
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

// runBlind warms ag up with its settings pointed where nothing listens (blind), its turn
// cancelled after blindTurn, and the settings put back whatever happened.
func (w warmUp) runBlind(ctx context.Context, ag *agent, blind func(on bool) error) error {
	if err := blind(true); err != nil {
		if back := blind(false); back != nil {
			return fmt.Errorf("put its settings back: %w", back)
		}
		return fmt.Errorf("point its settings away from the provider: %w", err)
	}
	err := w.turn(ctx, ag, blindTurn)
	if back := blind(false); back != nil {
		return fmt.Errorf("put its settings back: %w", back)
	}
	return err
}

// turn opens a session in ag and prompts it once, the prompt ending after at most limit (its
// error is what a refusal looks like); the process must live on.
func (w warmUp) turn(ctx context.Context, ag *agent, limit time.Duration) error {
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
	pctx, pcancel := context.WithTimeout(wctx, limit)
	_, _ = sess.Prompt(pctx, warmUpPrompt, nil)
	pcancel()
	if err := wctx.Err(); err != nil {
		return fmt.Errorf("the warm-up turn did not end: %w", err)
	}
	if !ag.alive() {
		return errors.New("the process ended during its warm-up")
	}
	return nil
}

// beyond reports whether an egress report says the run got anything but refusals.
func beyond(rep *sandbox.EgressReport) bool {
	return rep != nil && (rep.Answers > 0 || rep.SpentUSD > 0 || len(rep.Allowed) > 0)
}
