package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/redact"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// acpExitGrace is how long an ACP process may take to exit after its stdin closed (the CLI exits
// about 1 s after EOF, docs/acp.md §1) before the attempt stops it through its executor; at the
// call's deadline the wait is cut to what is left of acpEndGrace after it.
const acpExitGrace = 5 * time.Second

// The graces of a turn the call's deadline (or a cancel) stops, which together with the
// executor's stop stay within run.StopGraceTotal: acpCancelGrace for the stopReason after
// session/cancel (the CLI answers in about 80 ms, docs/acp.md §6), acpCloseGrace for the output to
// end after stdin closed, and acpEndGrace after the deadline for the process to exit before the
// executor stops (and kills) it.
const (
	acpCancelGrace = 1 * time.Second
	acpCloseGrace  = 500 * time.Millisecond
	acpEndGrace    = 1500 * time.Millisecond
)

// ACP runs a turn as one `cline --acp` process (a new one, or a warm one it kept) and one session
// in it (new, or a stored one loaded): the executor runs the process with its stdin attached,
// bridge/acp speaks the protocol over the pipes. Every tool call is decided by the turn's
// permission policy, every rejected one is reported. Deadlines: the turn's time limit sends
// session/cancel (bridge/acp), then closes stdin, then the executor stops the process. Steer
// messages waiting when a turn ends by itself become the session's next turns (steer.go).
type ACP struct {
	pool   *agents
	spares *spares
	log    *slog.Logger
}

// NewACP is an ACP engine that keeps up to warm processes of host calls, each for idle.
func NewACP(warm int, idle time.Duration, log *slog.Logger) *ACP {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ACP{pool: &agents{max: warm, idle: idle}, spares: &spares{idle: idle, log: log}, log: log}
}

// KeepSpares makes the engine start up to n spare agents for container conversations
// (spares.go); 0, the default, starts none. Call it before the first turn.
func (e *ACP) KeepSpares(n int) { e.spares.max = n }

// Keeps reports whether the engine keeps processes for later calls (Turn.KeepAs).
func (e *ACP) Keeps() bool { return e.pool.max > 0 }

// Close ends every kept process and every spare.
func (e *ACP) Close() {
	e.spares.close()
	e.pool.close()
}

// MakeRoom ends the processes kept in containers or pods — sessions' kept ones and spares, the
// spares being started too — when a call's pod finds no room on the cluster's nodes
// (sandbox/kubernetes OnNoRoom). A session goes on in a new pod with its history.
func (e *ACP) MakeRoom() {
	if n := e.spares.makeRoom() + e.pool.dropContainers(); n > 0 {
		e.log.Info("a call's pod finds no room on the cluster: the pods kept for conversations are given up", "ended", n)
	}
}

// Forget ends the container kept for a session (the session expired) and waits until it is gone.
func (e *ACP) Forget(session string) { e.pool.forget(session) }

// Holds reports whether a container is kept for the session's next turn.
func (e *ACP) Holds(session string) bool { return e.pool.holds(session) }

// Argv: ACP mode ignores -P/-m/-k/-c/--data-dir and would take `--auto-approve true` as the end of
// the permission requests that are the policy (docs/acp.md §5, §10).
func (*ACP) Argv(cline.Request) []string { return acp.Args() }

func (*ACP) Sessions() bool { return true }

// Env gives the ACP process its provider and key the only way ACP mode takes them: CLINE_PROVIDER
// and CLINE_API_KEY (the env key is what is sent, docs/acp.md §1, §10), read from the providers.json
// the attempt runs with, for the provider the call resolves. CLINE_SESSION_BACKEND_MODE=local
// keeps a hub daemon from outliving the process (§12). The provider block — its model too — is
// read here, before the process starts, and kept in the turn: a container writes its settings
// copy, so the host never reads that file again while or after the run goes (a FIFO there would
// hang the call, a symbolic link would make the host read a file of the run's choosing).
func (*ACP) Env(providers, override string, extra map[string]string, red Redactor) Provider {
	p := readProvider(providers, override)
	extra["CLINE_SESSION_BACKEND_MODE"] = "local"
	if p.ID != "" {
		extra["CLINE_PROVIDER"] = p.ID
	}
	if p.Key != "" {
		extra["CLINE_API_KEY"] = p.Key
		red.Learn(p.Key)
	}
	return p
}

// Run takes a kept process or starts one, runs the turn in it, then keeps the process (a clean
// turn of a keepable call) or ends it, and classifies what happened.
func (e *ACP) Run(ctx context.Context, t Turn) Facts {
	stderr := &cline.StderrScanner{}
	outTail, errTail := t.Red.NewTail(redact.DefaultTailChars), t.Red.NewTail(redact.DefaultTailChars)
	key, keep := e.key(t)
	spareKey, spares := key, keep && t.Container && t.SessionID == "" && t.Spare != nil && e.spares.max > 0
	ag, dataDir, idle := e.warmAgent(ctx, &t, key, keep, spares)
	ag.out.set(outTail)
	ag.err.set(io.MultiWriter(stderr, errTail))

	tctx, cancel := context.WithDeadline(ctx, t.Deadline)
	bctx, stop := context.WithCancel(tctx) // a spend limit ends the turn here
	t.Budget.Follow(stop)
	turn, s, terr := e.turn(bctx, t, ag)
	t.Budget.Unfollow()
	deadline := errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	stop()
	cancel()
	var x agentExit
	if t.Container {
		key.session = s.id // the next turn of this session alone
	}
	// A key-less container is kept only when its grant can be settled between turns: the proxy
	// lends its key to nothing until the session's next turn re-arms it with that call's allowance.
	kept := keep && terr == nil && !turn.Cancelled && !turn.TimedOut && turn.StopReason != "" && ag.alive() &&
		(!t.Container || (s.id != "" && ag.liveContainer() && (t.Spec.Credential == nil || ag.settles())))
	if kept && t.Container {
		rep, err := ag.between(ctx)
		idle = mergeEgress(idle, rep)
		if err != nil {
			e.log.Warn("a session's container is not kept", "err", err)
			kept = false
		}
	}
	if kept {
		ag.out.set(nil)
		ag.err.set(nil)
		x.exit.Container, x.exit.Egress = ag.report.Load(), idle
		e.pool.put(key, ag)
	} else {
		// A turn that ended by itself lets the process exit on EOF (acpExitGrace), but never past
		// acpEndGrace after the call's deadline, or a cancel: then the executor stops it.
		limit := t.Deadline.Add(acpEndGrace)
		if ctx.Err() != nil {
			limit = time.Now()
		}
		x = ag.end(limit)
		x.exit.Egress = mergeEgress(idle, x.exit.Egress)
		ag.out.set(nil)
		ag.err.set(nil)
	}
	stderr.Close()
	outTail.Flush()
	errTail.Flush()
	f := Facts{StdoutTail: outTail.String(), StderrTail: errTail.String(), SessionID: s.id, Warnings: s.warnings, Kept: kept, DataDir: dataDir}
	if spares && terr == nil {
		// The next conversation's process, started now that this call no longer needs the engine.
		w, keyless := warmUpOf(t)
		e.spares.fill(spareKey, t.Exec, t.Spec, t.Spare, w, keyless, e)
	}
	if errors.As(x.err, &f.CopyBack) {
		x.err = nil
	}
	if x.err != nil {
		f.Err, f.Deadline = x.err, deadline
		return f
	}
	f.Ran, f.Exit = true, x.exit
	f.ToolCalls = turn.Tools.ToolCalls
	f.Rejected = turn.Rejected
	f.MayHaveWritten = t.Container || len(turn.Tools.MutatingSuccesses) > 0
	f.Verdict = acp.Classify(turn, terr, cline.Outcome{
		ExitCode:       x.exit.Code,
		Signal:         x.exit.Signal,
		TimedOut:       deadline,
		Cancelled:      ctx.Err() != nil,
		TimeoutSeconds: t.TimeoutSeconds,
		Elapsed:        x.exit.Duration,
		Stderr:         stderr.Summary(),
		OOMKilled:      x.exit.OOMKilled,
		Analysis:       t.Analysis,
		Allowed:        t.Allowed,
	})
	f.Verdict = usage(t, f.Verdict, s, turn.SessionID)
	return f
}

// warmAgent gives the turn its process: a kept one (a host call's, or the session's container),
// a spare (a container first turn: its data dir becomes the turn's), else a new one. A kept
// container's egress grant is re-armed with the turn's credential (idle: what the proxy refused
// it while it waited); one that cannot be is ended, and the turn gets a new process.
func (e *ACP) warmAgent(ctx context.Context, t *Turn, key agentKey, keep, spares bool) (ag *agent, dataDir string, idle *sandbox.EgressReport) {
	switch {
	case keep && (!t.Container || t.SessionID != ""): // a new container session has none kept
		ag = e.pool.take(key)
		if ag != nil && t.Container && ag.settles() {
			var err error
			if idle, err = ag.settle(ctx, t.Spec.Credential); err != nil {
				e.log.Warn("a session's kept container is not used: its egress grant could not be re-armed", "err", err)
				go ag.end(time.Now())
				ag, idle = nil, nil
			}
		}
	case spares:
		if s := e.spares.take(key); s != nil {
			if ag, idle = s.ag, nil; s.disarmed {
				var err error
				if idle, err = ag.settle(ctx, t.Spec.Credential); err != nil {
					e.log.Warn("a spare is not used: its egress grant could not be armed", "err", err)
					go s.end()
					ag, idle = nil, nil
					break
				}
			}
			dataDir = ag.dataDir
			s.data.keep() // the session's now
			t.DataDir = dataDir
		}
	}
	if ag == nil {
		ag = startAgent(t.Exec, t.Spec, e.log)
		ag.own = t.Own.take()
		return ag, "", nil
	}
	t.Own.Release() // the kept process has its own policy files
	where := ""
	switch {
	case dataDir != "":
		where = ", started before the call in a container of its own"
	case t.Container:
		where = " in the session's container"
	}
	t.Progress(fmt.Sprintf("attempt %d: a warm Cline process takes the turn%s", t.N, where))
	return ag, dataDir, idle
}

// opened is the session a turn ran in: its id, and its cumulative usage before the turn.
type opened struct {
	id       string
	before   *cline.Usage
	model    string
	warnings []string
}

// usage completes a turn's verdict from the session's manifest: the turn's usage, the spend
// limits (a limit that stopped the turn; a cost past the limit that came only with its end).
func usage(t Turn, v cline.Verdict, s opened, sessionID string) cline.Verdict {
	if u, err := acp.ReadUsage(t.DataDir, sessionID); err == nil {
		t.Budget.SetCost(since(u, s.before).TotalCost)
		if v.OK {
			v.Usage = since(u, s.before)
		}
	}
	v = t.Budget.Verdict(v)
	if v.OK {
		v.Model = s.model
		if w := t.Budget.OverAtEnd(); w != "" {
			v.Warnings = append(v.Warnings, w)
		}
	}
	return v
}

// turn initializes the connection, opens a session in the turn's directory with its permission
// policy, selects the model (ACP ignores -m; docs/acp.md §1) and runs the prompt, then the steer
// messages that wait.
func (e *ACP) turn(ctx context.Context, t Turn, ag *agent) (acp.Turn, opened, error) {
	var s opened
	conn := ag.conn
	if !ag.ready {
		if _, err := conn.Initialize(ctx); err != nil {
			return acp.Turn{}, s, err
		}
		ag.ready = true
	}
	model := t.Model
	if model == "" {
		model = t.Provider.Model // read before the process started (Env)
	}
	sess, ahead := ag.takeAhead(t, model)
	var err error
	switch {
	case ahead:
	case t.SessionID != "":
		sess, err = conn.LoadSession(ctx, t.SessionID, t.Dir, t.Policy)
	default:
		sess, err = conn.NewSession(ctx, t.Dir, t.Policy)
	}
	if err != nil {
		return acp.Turn{}, s, err
	}
	defer sess.Close()
	s.id = sess.ID()
	if t.SessionID != "" {
		// The manifest's usage is the session's, cumulative: this turn's is the difference.
		s.before, _ = acp.ReadUsage(t.DataDir, sess.ID())
	}
	if model != "" && !ahead {
		if err := sess.SetModel(ctx, model); err != nil {
			return acp.Turn{SessionID: sess.ID()}, s, err
		}
	}
	if t.Thinking != "" && t.Thinking != "none" {
		s.warnings = append(s.warnings, fmt.Sprintf("thinking %q was not applied: the Cline CLI takes no thinking level in ACP mode", t.Thinking))
	}
	stopWatch := watchUsage(t, sess.ID(), s.before)
	at, err := sess.Prompt(ctx, t.Prompt, t.Event)
	at, err = steered(ctx, t, sess, at, err)
	stopWatch()
	s.model = model
	return at, s, err
}

// watchUsage follows an ACP session's cost while its turn runs: the CLI puts usage in the
// session's manifest, not on the wire (docs/acp.md), so the manifest is read every second. The
// returned func stops it and waits for it.
func watchUsage(t Turn, id string, before *cline.Usage) func() {
	if !t.Budget.WatchesCost() {
		return func() {}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(usagePoll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if u, err := acp.ReadUsage(t.DataDir, id); err == nil {
					t.Budget.SetCost(since(u, before).TotalCost)
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// usagePoll is how often watchUsage reads an ACP session's manifest.
const usagePoll = time.Second
