package run

import (
	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/run/engine"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Protocol names how the runner speaks to the CLI (--cline-protocol).
type Protocol string

const (
	// ProtocolJSON is the one-shot `cline --json` run (engine.JSON).
	ProtocolJSON Protocol = "json"
	// ProtocolACP is a conversation over the Agent Client Protocol (`cline --acp`, engine.ACP).
	ProtocolACP Protocol = "acp"
)

// engineFor is the engine of one call: ACP when the call continues a session or asks for it, else
// the server's.
func (r *Runner) engineFor(c Call) engine.Engine {
	switch {
	case c.SessionID != "" || c.Protocol == ProtocolACP:
		return r.acp
	case c.Protocol == ProtocolJSON:
		return engine.JSON{}
	default:
		return r.engine
	}
}

// turn is what the engine gets of one attempt (bridge/run/engine): the prepared spec and its
// executor, the call's deadline and limits, the sinks for progress, events and output, the
// budget, and for ACP the prompt, the permission policy and the session.
func (k *call) turn(a *attempt, exec sandbox.Executor, spec sandbox.Spec) engine.Turn {
	t := engine.Turn{
		N: a.n, Container: a.iso.Container(), Exec: exec, Spec: spec,
		Deadline: a.deadline, TimeoutSeconds: k.TimeoutSeconds,
		Analysis: k.Tool.Analysis(), Allowed: allowedTools(k.r.cfg.SeedPolicy, a.iso),
		Progress: k.progress, Event: func(ev cline.Event) { k.onEvent(a.n, ev) },
		Red: k.red, Budget: k.budget, Own: &a.own,
	}
	if !k.engine.Sessions() {
		return t
	}
	t.Prompt = k.prep.acpPrompt(a.iso)
	t.Policy = k.prep.askPolicy(a.iso)
	t.Dir, t.SessionID, t.Model, t.Thinking = k.prep.dir, k.SessionID, k.Model, k.Thinking
	t.DataDir = k.prep.dataDir(a.iso, spec)
	t.Provider = a.provider
	t.KeepAs, t.Shape, t.Spare = k.prep.keepAs(a.iso), a.shape, a.spare
	t.Steer = k.prep.caller.next()
	return t
}

// keepAs is the class of calls that may share an attempt's process once its turn is done, ""
// when it must not be kept (the server keeps no warm agents, or the engine is not ACP): on the
// host a run without a provider/model override (its settings copy would go with the call); in
// Docker a live session's turn (liveSession). The class is the tool's policy files.
func (p *prep) keepAs(iso sandbox.Isolation) string {
	if !p.r.acp.Keeps() || !p.engine.Sessions() {
		return ""
	}
	switch {
	case iso == sandbox.IsolationHost && !p.Override():
	case iso.Container() && p.liveSession():
	default:
		return ""
	}
	switch {
	case !p.Tool.Analysis():
		return "edits"
	case p.r.cfg.SeedPolicy:
		return "analysis-seed"
	default:
		return "analysis"
	}
}

// liveSession reports whether a container turn's container (a pod too) may be kept for the
// session's next turn (bridge/run/engine: keyed by the session and the container's shape): a
// conversation of ask_cline or ask_cline_workspace with its own data dir. apply_cline_edits never
// keeps its container — a process a turn left in it could change the checkout after the call's
// diff was taken — and a review is one turn. A key-less run's is kept when its grant can be
// settled between turns (livesession.go).
func (p *prep) liveSession() bool {
	return p.sess.data != "" && (p.Tool == AskCline || p.Tool == AskClineWorkspace)
}

// acpPolicy answers the CLI's permission requests: analysis reads (and runs commands only in a
// container, as the --json policy does); apply_cline_edits edits but never commits. The seed policy
// rejects every tool.
func (p *prep) acpPolicy(iso sandbox.Isolation) acp.Policy {
	switch {
	case !p.Tool.Analysis():
		return acp.Edits()
	case p.r.cfg.SeedPolicy:
		return nil
	default:
		return acp.ReadOnly(iso.Container())
	}
}

// acpPrompt is the turn's text. ACP has no system prompt of the client's, so a call's system prompt
// leads the text, marked as such; the run's policy (policyBlock) follows the task.
func (p *prep) acpPrompt(iso sandbox.Isolation) string {
	text := p.Prompt
	if p.SystemPrompt != "" {
		text = "System instructions (from the caller):\n" + p.SystemPrompt + "\n\nTask:\n" + p.Prompt
	}
	return text + "\n\n" + p.policyBlock(iso)
}

// dataDir is where the attempt's CLI keeps its sessions: a container session's own data dir,
// else CLINE_DATA_DIR of its environment, else the user's data dir.
func (p *prep) dataDir(iso sandbox.Isolation, spec sandbox.Spec) string {
	if iso.Container() && p.sess.data != "" {
		return p.sess.data
	}
	if d := envLookup(spec.Env)("CLINE_DATA_DIR"); d != "" {
		return d
	}
	return settings.DataDir(envLookup(p.r.cfg.Env), p.r.cfg.Home)
}
