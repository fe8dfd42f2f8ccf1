package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Warm agents: a `cline --acp` process answers its first prompt 1–3 s after it starts, and each
// later one in 0.1–0.5 s (docs/acp.md §11). After a clean turn of a host call without a
// provider/model override, the ACP engine keeps the process for the next call with the same key —
// the tool class (its policy files differ), the directory, the provider and its key — for
// the idle time, at most as many as the server keeps; the next such call opens a new session (or loads its
// own) in it instead of starting one. A turn that failed, was cancelled or timed out ends its
// process.
//
// Live container sessions: a Docker turn of a conversation (Turn.Shape set) keeps its process, and
// so its container, for the next turn of the same session alone — the key adds the session id and
// the container's shape (mounts, egress, environment), so no other session, tool or spec takes it.
// Its settings copy and policy files lie in the directory the agent owns. A container whose
// report did not come (an executor that does not tell) is never kept, nor a copy-mode one whose
// executor cannot bring its changes back between turns (sandbox.Syncer: Docker's copy mode and a
// pod's can, after each turn, before the call reads the session's usage).
//
// A kept process holds what it started with: the environment (the provider's key — a key that
// changed in providers.json changes the key, so the old process is not used again), and the
// tool-policy files, which live in a directory the agent owns (removed with it) instead of the
// call's private dir. Its output is routed to the tails of the call whose turn runs.

// agentKey says which calls may share a kept process.
type agentKey struct {
	class    string // the policy files: the tool class (analysis ones disable every tool but reading)
	dir      string
	provider string
	keyHash  string // sha256 of the API key the process was started with
	session  string // a container's: the session it runs ("" on the host: any session)
	shape    string // a container's: Turn.Shape
}

func hashKey(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:8])
}

// key is the key of a turn's process, and whether it may be kept at all: the turn's call keeps
// it (KeepAs) and the engine keeps processes.
func (e *ACP) key(t Turn) (agentKey, bool) {
	if t.KeepAs == "" || !e.Keeps() {
		return agentKey{}, false
	}
	p := t.Provider // read before the process started (Env)
	k := agentKey{class: t.KeepAs, dir: t.Dir, provider: p.ID, keyHash: hashKey(p.Key)}
	if t.Spec.Credential != nil {
		k.keyHash = "" // the key is a per-run placeholder; the shape holds the credential lent
	}
	if t.Container {
		if t.Shape == "" {
			return agentKey{}, false
		}
		k.session, k.shape = t.SessionID, t.Shape
	}
	return k, true
}

// agent is one live `cline --acp` process and its connection.
type agent struct {
	conn  *acp.Conn
	stdin io.Closer // the process's stdin: closing it makes the CLI exit
	out   *route    // the process's stdout after the protocol reader took it: the current call's tail
	err   *route    // stderr: the current call's scanner and tail
	stop  context.CancelFunc
	done  chan agentExit
	own   Owned // a directory the agent owns (its policy files); removed when it ends
	// dataDir is a spare's session data dir (spares.go), which its claiming call takes over.
	dataDir string
	// ahead is a spare's session opened before its claim with aheadModel selected (warmup.go),
	// nil once a turn took it.
	ahead      *acp.Session
	aheadModel string
	ready      bool
	idle       *time.Timer
	// report is what the agent's container was created with (sandbox.Spec.Started), nil on the
	// host and until the container started.
	report atomic.Pointer[sandbox.ContainerReport]
	// settler settles the container's egress grant between turns (sandbox.Spec.Live), nil
	// without an egress proxy that can.
	settler atomic.Pointer[sandbox.Settler]
	// syncer brings a copy-mode container's changes back between turns (sandbox.Spec.Sync), nil
	// for a container whose mounts are the host's own.
	syncer atomic.Pointer[sandbox.Syncer]
}

// sync brings back what the agent's turn wrote in its container's copied mounts (nothing to do
// for mounts the host shares).
func (ag *agent) sync(ctx context.Context) error {
	if s := ag.syncer.Load(); s != nil {
		return (*s).Sync(context.WithoutCancel(ctx))
	}
	return nil
}

// settle settles the agent's egress grant (sandbox.Settler); an agent without one has nothing
// to settle.
func (ag *agent) settle(ctx context.Context, cred *sandbox.Credential) (*sandbox.EgressReport, error) {
	s := ag.settler.Load()
	if s == nil {
		return nil, errors.New("the container's egress grant cannot be settled")
	}
	return (*s).Settle(context.WithoutCancel(ctx), cred)
}

// between readies a container's kept agent for its session's next turn, before the call reads
// its usage and settings: a copy-mode container's turn comes back (sync), and its egress grant is
// settled without a credential — both at once, each a round trip to the container's engine. It
// returns the settled report and why the agent cannot be kept.
func (ag *agent) between(ctx context.Context) (*sandbox.EgressReport, error) {
	var rep *sandbox.EgressReport
	var serr error
	var wg sync.WaitGroup
	if ag.settles() {
		wg.Go(func() { rep, serr = ag.settle(ctx, nil) })
	}
	err := ag.sync(ctx)
	wg.Wait()
	if err != nil {
		err = fmt.Errorf("its changes could not be brought back: %w", err)
	}
	if serr != nil {
		serr = fmt.Errorf("its egress grant could not be settled: %w", serr)
	}
	return rep, errors.Join(err, serr)
}

// settles reports whether the agent's egress grant can be settled between turns.
func (ag *agent) settles() bool { return ag.settler.Load() != nil }

// mergeEgress is what two egress reports of one turn say together.
func mergeEgress(a, b *sandbox.EgressReport) *sandbox.EgressReport {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &sandbox.EgressReport{Refused: append(append([]sandbox.Refusal(nil), a.Refused...), b.Refused...),
		Allowed: append(append([]sandbox.Reached(nil), a.Allowed...), b.Allowed...),
		Answers: a.Answers + b.Answers, SpentUSD: a.SpentUSD + b.SpentUSD}
}

// liveContainer reports whether the agent's container may be kept: it started, and its mounts
// are the host's own or its executor brings copied ones back between turns (a copy-mode
// container without a Syncer brings its changes back only when it ends).
func (ag *agent) liveContainer() bool {
	r := ag.report.Load()
	if r == nil {
		return false
	}
	if ag.syncer.Load() != nil {
		return true
	}
	for _, m := range r.Mounts {
		if m.Kind == "copy" {
			return false
		}
	}
	return true
}

type agentExit struct {
	exit sandbox.Exit
	err  error
}

// route is an io.Writer whose destination changes from turn to turn (nil: dropped).
type route struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *route) set(w io.Writer) {
	r.mu.Lock()
	r.w = w
	r.mu.Unlock()
}

func (r *route) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		_, _ = r.w.Write(p)
	}
	return len(p), nil
}

// startAgent runs spec (its Stdin, Stdout and Stderr are the agent's) on exec until the agent ends;
// the process's life is the agent's, not the call's.
func startAgent(exec sandbox.Executor, spec sandbox.Spec, log *slog.Logger) *agent {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ag := &agent{out: &route{}, err: &route{}, done: make(chan agentExit, 1)}
	spec.Stdin = inR
	spec.Stdout = io.MultiWriter(outW, ag.out)
	spec.Stderr = ag.err
	spec.Started = func(r sandbox.ContainerReport) { ag.report.Store(&r) }
	spec.Live = func(s sandbox.Settler) { ag.settler.Store(&s) }
	spec.Sync = func(s sandbox.Syncer) { ag.syncer.Store(&s) }
	ctx, stop := context.WithCancel(context.Background())
	ag.stop = stop
	go func() {
		x, err := exec.Run(ctx, spec)
		_ = outW.CloseWithError(io.EOF)
		_ = inR.CloseWithError(io.ErrClosedPipe)
		ag.done <- agentExit{x, err}
	}()
	ag.stdin = inW
	ag.conn = acp.New(inW, outR, acp.Options{ClientName: "cline-mcp", Logger: log,
		CancelGrace: acpCancelGrace, CloseGrace: acpCloseGrace})
	return ag
}

// end closes the agent's stdin, waits for the process to exit — acpExitGrace, but not past limit
// (zero: no limit) — then stops it through its executor (polite stop, --stop-grace, kill), and
// removes what the agent owned. It returns how the process ended.
func (ag *agent) end(limit time.Time) agentExit {
	_ = ag.stdin.Close() // without waiting for the output to end, as conn.Close would
	wait := acpExitGrace
	if !limit.IsZero() {
		wait = min(wait, max(time.Until(limit), 0))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var x agentExit
	select {
	case x = <-ag.done:
	case <-t.C:
		ag.stop()
		x = <-ag.done
	}
	ag.stop()
	_ = ag.conn.Close() // the process is gone: its output has ended
	ag.release()
	return x
}

func (ag *agent) release() { ag.own.Release() }

// alive reports whether the process still speaks.
func (ag *agent) alive() bool {
	select {
	case <-ag.conn.Done():
		return false
	default:
		return true
	}
}

// agents are the kept processes.
type agents struct {
	max  int
	idle time.Duration
	mu   sync.Mutex
	m    map[agentKey][]*agent
	n    int
}

// take returns a kept live process for key, or nil.
func (p *agents) take(key agentKey) *agent {
	p.mu.Lock()
	defer p.mu.Unlock()
	for list := p.m[key]; len(list) > 0; list = p.m[key] {
		ag := list[len(list)-1]
		p.m[key] = list[:len(list)-1]
		p.n--
		ag.idle.Stop()
		if ag.alive() {
			return ag
		}
		go ag.end(time.Time{})
	}
	return nil
}

// put keeps ag for key, or ends it when the pool is full or off.
func (p *agents) put(key agentKey, ag *agent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n >= p.max {
		go ag.end(time.Time{})
		return
	}
	if p.m == nil {
		p.m = map[agentKey][]*agent{}
	}
	p.m[key] = append(p.m[key], ag)
	p.n++
	ag.idle = time.AfterFunc(p.idle, func() {
		p.mu.Lock()
		list := p.m[key]
		for i, x := range list {
			if x == ag {
				p.m[key] = append(list[:i:i], list[i+1:]...)
				p.n--
				p.mu.Unlock()
				ag.end(time.Time{})
				return
			}
		}
		p.mu.Unlock()
	})
}

// dropContainers ends every kept process of a container or pod (a session's), and returns how
// many: their room is wanted by a call.
func (p *agents) dropContainers() int {
	p.mu.Lock()
	var out []*agent
	for k, list := range p.m {
		if k.shape == "" { // a host process: it holds no room of a cluster
			continue
		}
		for _, ag := range list {
			ag.idle.Stop()
		}
		out = append(out, list...)
		p.n -= len(list)
		delete(p.m, k)
	}
	p.mu.Unlock()
	for _, ag := range out {
		go ag.end(time.Time{})
	}
	return len(out)
}

// close ends every kept process.
func (p *agents) close() {
	p.mu.Lock()
	m := p.m
	p.m, p.n = nil, 0
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, list := range m {
		for _, ag := range list {
			ag.idle.Stop()
			wg.Add(1)
			go func() { defer wg.Done(); ag.end(time.Time{}) }()
		}
	}
	wg.Wait()
}

// holds reports whether a process is kept for session.
func (p *agents) holds(session string) bool {
	if session == "" {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, list := range p.m {
		if key.session == session && len(list) > 0 {
			return true
		}
	}
	return false
}

// forget ends the kept processes of a session (it expired) and returns once they are gone: the
// worktree a session's container has mounted is released only after it.
func (p *agents) forget(session string) {
	if session == "" {
		return
	}
	p.mu.Lock()
	var gone []*agent
	for key, list := range p.m {
		if key.session == session {
			gone = append(gone, list...)
			p.n -= len(list)
			delete(p.m, key)
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, ag := range gone {
		ag.idle.Stop()
		wg.Add(1)
		go func() { defer wg.Done(); ag.end(time.Time{}) }()
	}
	wg.Wait()
}
