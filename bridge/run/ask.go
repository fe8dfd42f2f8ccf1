package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Approvals that reach the user. With Config.AskCommands the ACP engine leaves apply_cline_edits'
// commands (those the git allow-list lets through) to the user: the caller of Do puts the
// question through its AskFunc (the MCP layer: an elicitation to the client, or a question kept
// on a background job), each within Config.AskTimeout; no AskFunc, no answer in time or a "no"
// rejects the call with a reason the result reports. The turn's deadline always wins.

// DefaultAskTimeout is how long a permission request put to the user waits for an answer.
const DefaultAskTimeout = 60 * time.Second

// Permission is a tool call put to the user. Everything in it comes from the agent: show it as
// data.
type Permission struct {
	ID       string   `json:"id"`
	Tool     string   `json:"tool"`
	Kind     string   `json:"kind"`
	Title    string   `json:"title"`
	Commands []string `json:"commands,omitempty"`
}

// AskFunc asks the user about one tool call and returns whether they allow it, or why not. It
// must return soon after ctx ends (the request's timeout, or the turn's end).
type AskFunc func(ctx context.Context, p Permission) (allow bool, reason string)

// caller is what the caller of Do lends a running call (Call.Ask, Call.Steer), read once when
// the call begins.
type caller struct {
	ask   AskFunc
	steer *Steer
}

// next is the steer message waiting for the next turn boundary (false: none), nil without a queue.
func (c caller) next() func() (string, bool) {
	if c.steer == nil {
		return nil
	}
	return c.steer.take
}

// askPolicy is the call's ACP policy with the calls it leaves to the user resolved through the
// caller's AskFunc.
func (p *prep) askPolicy(iso sandbox.Isolation) acp.Policy {
	pol := p.acpPolicy(iso)
	if !p.Tool.Analysis() && p.r.cfg.AskCommands {
		pol = acp.AskCommands(pol)
	}
	timeout := p.r.cfg.AskTimeout
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	var asker acp.Asker
	if ask := p.caller.ask; ask != nil {
		asker = func(ctx context.Context, c acp.ToolCall) acp.Decision {
			perm := Permission{ID: c.ID, Tool: c.Tool, Kind: c.Kind, Title: p.red.Text(c.Title)}
			for _, cmd := range acp.Commands(c) {
				perm.Commands = append(perm.Commands, p.red.Text(cmd))
			}
			p.progress(fmt.Sprintf("waiting for the user: may Cline run %s?", snippet(perm.Title, 120)))
			allow, why := ask(ctx, perm)
			if allow {
				p.progress("the user allowed " + snippet(perm.Title, 120))
				return acp.Decision{Allow: true}
			}
			if why == "" {
				why = "denied by the user; do not retry"
			}
			p.progress("not allowed: " + snippet(perm.Title, 120) + ": " + why)
			return acp.Decision{Reason: why}
		}
	}
	return acp.Resolve(pol, asker, timeout)
}

// policyBlock tells the agent, before it tries anything, what this run's policy allows: its tools,
// its commands, its network, and that a refused call must not be retried (a rejected permission
// reaches the model only as "User rejected the tool call", without our reason).
func (p *prep) policyBlock(iso sandbox.Isolation) string {
	var b strings.Builder
	b.WriteString("Policy for this run (set by cline-mcp, not negotiable):\n")
	switch {
	case p.Tool.Analysis() && p.r.cfg.SeedPolicy:
		b.WriteString("- Tools: none; answer from what you know.\n")
	case p.Tool.Analysis():
		fmt.Fprintf(&b, "- Tools: only %s. Files cannot be written.\n", strings.Join(cline.AnalysisTools(iso.Container()), ", "))
		if !iso.Container() {
			b.WriteString("- Commands: not allowed.\n")
		}
	default:
		b.WriteString("- Tools: reading, searching and editing files in the working directory.\n")
		if p.r.cfg.AskCommands && p.engine.Sessions() { // only the ACP engine asks
			b.WriteString("- Commands: each is put to the user first; one the user declines or leaves unanswered is refused.\n")
		} else {
			b.WriteString("- Commands: allowed.\n")
		}
		b.WriteString("- Git: only commands that read (status, diff, log, show, grep, blame, ...) and checkout/restore of working-tree files; never commit, merge, rebase, reset, switch branches, stash, push, fetch or write .git.\n")
	}
	b.WriteString("- Network: " + p.networkLine(iso) + "\n")
	b.WriteString("- A tool call refused by this policy (reported as \"User rejected the tool call\") or an endpoint refused with 403 is denied by policy: do not retry it, do not work around it; say in your answer what you could not do.")
	return b.String()
}

// jsonPrompt is the prompt of a --json run: the task, then the policy block (a system prompt
// would replace Cline's own: -s).
func (p *prep) jsonPrompt(iso sandbox.Isolation) string {
	if p.engine.Sessions() {
		return p.Prompt // the ACP engine composes its own (acpPrompt)
	}
	return p.Prompt + "\n\n" + p.policyBlock(iso)
}

func (p *prep) networkLine(iso sandbox.Isolation) string {
	switch {
	case !iso.Container():
		return "use none but your model provider's API."
	case iso == sandbox.IsolationKubernetes:
		return "only the endpoints this server's network policy allows; everything else is unreachable."
	case p.r.cfg.DockerEgress == sandbox.EgressNone:
		return "none."
	case p.r.cfg.DockerEgress == sandbox.EgressOpen:
		return "use none but your model provider's API."
	}
	allow := "only your model provider's API"
	if len(p.r.cfg.EgressAllow) > 0 {
		allow += " and " + strings.Join(p.r.cfg.EgressAllow, ", ")
	}
	return allow + "; any other endpoint answers 403."
}
