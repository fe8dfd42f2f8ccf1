package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/redact"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Protocol names how the runner speaks to the CLI (--cline-protocol).
type Protocol string

const (
	// ProtocolJSON is the one-shot `cline --json` run (jsonEngine).
	ProtocolJSON Protocol = "json"
	// ProtocolACP is a conversation over the Agent Client Protocol (`cline --acp`, acpEngine).
	ProtocolACP Protocol = "acp"
)

// acpExitGrace is how long an ACP process may take to exit after its stdin closed (the CLI exits
// about 1 s after EOF, docs/acp.md §1) before the attempt stops it through its executor.
const acpExitGrace = 5 * time.Second

// acpEngine runs an attempt as one `cline --acp` process and one turn in a new session: the
// executor runs the process with its stdin attached, bridge/acp speaks the protocol over the
// pipes. The call's settings discipline, tool policy files, mounts and redaction are the same as
// for --json; on top, every tool call is decided by a permission answer (acp.ReadOnly for the
// analysis tools — with commands only in a container — and acp.Edits for apply_cline_edits), and
// every rejected call is reported as a warning. Deadlines: the turn's time limit sends
// session/cancel (bridge/acp), then closes stdin, then the executor stops the process.
type acpEngine struct{}

// argv: ACP mode ignores -P/-m/-k/-c/--data-dir and would take `--auto-approve true` as the end of
// the permission requests that are the policy (docs/acp.md §5, §10).
func (acpEngine) argv(cline.Request) []string { return acp.Args() }

func (acpEngine) sessions() bool { return true }

// env gives the ACP process its provider and key the only way ACP mode takes them: CLINE_PROVIDER
// and CLINE_API_KEY (the env key is what is sent, docs/acp.md §1, §10), read from the providers.json
// this attempt runs with (the user's file for a default host run, else the attempt's private
// copy), for the provider the call resolves. CLINE_SESSION_BACKEND_MODE=local keeps a hub daemon
// from outliving the process (§12).
func (acpEngine) env(k *call, a *attempt, providers string, extra map[string]string) {
	a.providers = providers
	p := readProvider(providers, k.Provider)
	extra["CLINE_SESSION_BACKEND_MODE"] = "local"
	if p.id != "" {
		extra["CLINE_PROVIDER"] = p.id
	}
	if p.key != "" {
		extra["CLINE_API_KEY"] = p.key
		k.red.Learn(p.key)
	}
}

func (e acpEngine) run(ctx context.Context, k *call, a *attempt, exec sandbox.Executor, spec sandbox.Spec) *sandbox.CopyBackError {
	stderr := &cline.StderrScanner{}
	outTail, errTail := k.red.NewTail(redact.DefaultTailChars), k.red.NewTail(redact.DefaultTailChars)
	key, keep := k.agentKey(a)
	var ag *agent
	if keep {
		ag = k.r.agents.take(key)
	}
	if ag != nil {
		a.dropOwn() // the kept process has its own policy files
		k.progress(fmt.Sprintf("attempt %d: a warm Cline process takes the turn", a.n))
	} else {
		ag = startAgent(exec, spec, k.r.log)
		ag.own, ag.untrack = a.own, a.untrackOwn
		a.own, a.untrackOwn = "", nil
	}
	ag.out.set(outTail)
	ag.err.set(io.MultiWriter(stderr, errTail))

	dataDir := k.acpDataDir(a, spec)
	tctx, cancel := context.WithTimeout(ctx, time.Duration(k.TimeoutSeconds)*time.Second)
	bctx, stop := context.WithCancel(tctx) // a spend limit ends the turn here
	k.budget.begin(stop)
	turn, model, terr := e.turn(bctx, k, a, ag, dataDir)
	k.budget.end()
	deadline := errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	stop()
	cancel()
	var x agentExit
	if keep && terr == nil && !turn.Cancelled && !turn.TimedOut && turn.StopReason != "" && ag.alive() {
		ag.out.set(nil)
		ag.err.set(nil)
		k.r.agents.put(key, ag)
	} else {
		x = ag.end()
		ag.out.set(nil)
		ag.err.set(nil)
	}
	stderr.Close()
	outTail.Flush()
	errTail.Flush()
	a.stdoutTail, a.stderrTail = outTail.String(), errTail.String()
	var copyBack *sandbox.CopyBackError
	if errors.As(x.err, &copyBack) {
		x.err = nil
	}
	if x.err != nil {
		a.verdict = k.budget.verdict(k.startVerdict(ctx, x.err, a.iso, deadline))
		return nil
	}
	a.ran, a.exit = true, x.exit
	a.toolCalls = turn.Tools.ToolCalls
	a.rejected = turn.Rejected
	if a.iso.Container() || len(turn.Tools.MutatingSuccesses) > 0 {
		k.mayHaveWritten = true
	}
	a.verdict = acp.Classify(turn, terr, cline.Outcome{
		ExitCode:       x.exit.Code,
		Signal:         x.exit.Signal,
		TimedOut:       deadline,
		Cancelled:      ctx.Err() != nil,
		TimeoutSeconds: k.TimeoutSeconds,
		Elapsed:        x.exit.Duration,
		Stderr:         stderr.Summary(),
		OOMKilled:      x.exit.OOMKilled,
		Analysis:       k.Tool.Analysis(),
		Allowed:        k.allowedTools(a.iso),
	})
	k.turnUsage(a, dataDir, turn.SessionID, model)
	return copyBack
}

// turnUsage completes a turn's verdict from the session's manifest: the turn's usage, the spend
// limits (a limit that stopped the turn; a cost past the limit that came only with its end).
func (k *call) turnUsage(a *attempt, dataDir, sessionID, model string) {
	if u, err := acp.ReadUsage(dataDir, sessionID); err == nil {
		k.budget.setCost(since(u, a.usageBefore).TotalCost)
		if a.verdict.OK {
			a.verdict.Usage = since(u, a.usageBefore)
		}
	}
	a.verdict = k.budget.verdict(a.verdict)
	if a.verdict.OK {
		a.verdict.Model = model
		if w := k.budget.overAtEnd(); w != "" {
			a.verdict.Warnings = append(a.verdict.Warnings, w)
		}
	}
}

// turn initializes the connection, opens a session in the call's directory with the tool's
// permission policy, selects the model (ACP ignores -m; docs/acp.md §1) and runs the prompt.
func (acpEngine) turn(ctx context.Context, k *call, a *attempt, ag *agent, dataDir string) (acp.Turn, string, error) {
	conn := ag.conn
	if !ag.ready {
		if _, err := conn.Initialize(ctx); err != nil {
			return acp.Turn{}, "", err
		}
		ag.ready = true
	}
	var sess *acp.Session
	var err error
	if k.SessionID != "" {
		sess, err = conn.LoadSession(ctx, k.SessionID, k.dir, k.acpPolicy(a.iso))
	} else {
		sess, err = conn.NewSession(ctx, k.dir, k.acpPolicy(a.iso))
	}
	if err != nil {
		return acp.Turn{}, "", err
	}
	defer sess.Close()
	a.sessionID = sess.ID()
	if k.SessionID != "" {
		// The manifest's usage is the session's, cumulative: this turn's is the difference.
		a.usageBefore, _ = acp.ReadUsage(dataDir, sess.ID())
	}
	model := k.Model
	if model == "" {
		model = readProvider(a.providers, k.Provider).model
	}
	if model != "" {
		if err := sess.SetModel(ctx, model); err != nil {
			return acp.Turn{SessionID: sess.ID()}, "", err
		}
	}
	if k.Thinking != "" && k.Thinking != "none" {
		a.warn(fmt.Sprintf("thinking %q was not applied: the Cline CLI takes no thinking level in ACP mode", k.Thinking))
	}
	stopWatch := k.watchUsage(dataDir, sess.ID(), a.usageBefore)
	t, err := sess.Prompt(ctx, k.acpPrompt(), func(ev cline.Event) { k.onEvent(a, ev) })
	stopWatch()
	return t, model, err
}

// acpPolicy answers the CLI's permission requests: analysis reads (and runs commands only in a
// container, as the --json policy does); apply_cline_edits edits but never commits. The seed policy
// rejects every tool.
func (k *call) acpPolicy(iso sandbox.Isolation) acp.Policy {
	switch {
	case !k.Tool.Analysis():
		return acp.Edits()
	case k.r.cfg.SeedPolicy:
		return nil
	default:
		return acp.ReadOnly(iso.Container())
	}
}

// acpPrompt is the turn's text. ACP has no system prompt of the client's, so a call's system prompt
// leads the text, marked as such.
func (k *call) acpPrompt() string {
	if k.SystemPrompt == "" {
		return k.Prompt
	}
	return "System instructions (from the caller):\n" + k.SystemPrompt + "\n\nTask:\n" + k.Prompt
}

// acpDataDir is where the attempt's CLI keeps its sessions: a container session's own data dir,
// else CLINE_DATA_DIR of its environment, else the user's data dir.
func (k *call) acpDataDir(a *attempt, spec sandbox.Spec) string {
	if a.iso.Container() && k.sessData != "" {
		return k.sessData
	}
	if d := envLookup(spec.Env)("CLINE_DATA_DIR"); d != "" {
		return d
	}
	return settings.DataDir(envLookup(k.r.cfg.Env), k.r.cfg.Home)
}

// provider is what ACP needs of the provider block a call resolves.
type provider struct{ id, key, model string }

// readProvider reads the block of the provider a call resolves from a providers.json: the override,
// else lastUsedProvider, else "cline" (the CLI's own order). Reading is best effort and bounded: a
// missing or unusable file gives the id alone, and the CLI then says what it lacks.
func readProvider(path, override string) provider {
	p := provider{id: override}
	b, err := readBounded(path, 4<<20)
	if err != nil {
		if p.id == "" {
			p.id = "cline"
		}
		return p
	}
	var doc struct {
		LastUsed  string `json:"lastUsedProvider"`
		Providers map[string]struct {
			Settings struct {
				APIKey string `json:"apiKey"`
				Model  string `json:"model"`
				Auth   struct {
					APIKey string `json:"apiKey"`
				} `json:"auth"`
			} `json:"settings"`
		} `json:"providers"`
	}
	_ = json.Unmarshal(b, &doc)
	if p.id == "" {
		p.id = doc.LastUsed
	}
	if p.id == "" {
		p.id = "cline"
	}
	s := doc.Providers[p.id].Settings
	p.key, p.model = s.APIKey, s.Model
	if p.key == "" {
		p.key = s.Auth.APIKey
	}
	return p
}

// readBounded reads a regular file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", path, max)
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// since is the usage of one turn: the session's cumulative usage now minus before the turn.
func since(now, before *cline.Usage) *cline.Usage {
	if now == nil || before == nil {
		return now
	}
	u := *now
	u.InputTokens -= before.InputTokens
	u.OutputTokens -= before.OutputTokens
	u.CacheReadTokens -= before.CacheReadTokens
	u.CacheWriteTokens -= before.CacheWriteTokens
	u.TotalCost -= before.TotalCost
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.TotalCost < 0 {
		return now // the manifest went backwards: report what it says
	}
	return &u
}
