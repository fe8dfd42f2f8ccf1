package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Warm agents: a `cline --acp` process answers its first prompt 1–3 s after it starts, and each
// later one in 0.1–0.5 s (docs/acp.md §11). After a clean turn of a host call without a
// provider/model override, the ACP engine keeps the process for the next call with the same key —
// the tool class (its policy files differ), the directory, the provider and its key — for
// --warm-idle, at most --warm-agents of them; the next such call opens a new session (or loads its
// own) in it instead of starting one. A turn that failed, was cancelled or timed out ends its
// process. Containers are never kept: their mounts and settings copy belong to one call.
//
// A kept process holds what it started with: the environment (the provider's key — a key that
// changed in providers.json changes the key, so the old process is not used again), and the
// tool-policy files, which live in a directory the agent owns (removed with it) instead of the
// call's private dir. Its output is routed to the tails of the call whose turn runs.

// agentKey says which calls may share a kept process.
type agentKey struct {
	analysis bool // the analysis policy files (every tool but the reading ones disabled)
	seed     bool
	dir      string
	provider string
	keyHash  string // sha256 of the API key the process was started with
}

func hashKey(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:8])
}

// keepable reports whether an attempt's process may be kept for later calls: an ACP run on the
// host without a provider/model override (its settings copy would go with the call) while the
// server keeps warm agents.
func (k *call) keepable(iso sandbox.Isolation) bool {
	return k.r.agents.max > 0 && k.engine.sessions() && iso == sandbox.IsolationHost && !k.Override()
}

// agentKey is the key of an attempt's process, and whether it may be kept at all.
func (k *call) agentKey(a *attempt) (agentKey, bool) {
	if !k.keepable(a.iso) {
		return agentKey{}, false
	}
	p := readProvider(a.providers, "")
	return agentKey{analysis: k.Tool.Analysis(), seed: k.r.cfg.SeedPolicy, dir: k.dir, provider: p.id, keyHash: hashKey(p.key)}, true
}

// agent is one live `cline --acp` process and its connection.
type agent struct {
	conn    *acp.Conn
	out     *route // the process's stdout after the protocol reader took it: the current call's tail
	err     *route // stderr: the current call's scanner and tail
	stop    context.CancelFunc
	done    chan agentExit
	own     string // a directory the agent owns (its policy files); removed when it ends
	untrack func()
	ready   bool
	idle    *time.Timer
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
	ctx, stop := context.WithCancel(context.Background())
	ag.stop = stop
	go func() {
		x, err := exec.Run(ctx, spec)
		_ = outW.CloseWithError(io.EOF)
		_ = inR.CloseWithError(io.ErrClosedPipe)
		ag.done <- agentExit{x, err}
	}()
	ag.conn = acp.New(inW, outR, acp.Options{ClientName: "cline-mcp", Logger: log})
	return ag
}

// end closes the agent's stdin, waits acpExitGrace for the process to exit, then stops it through
// its executor, and removes what the agent owned. It returns how the process ended.
func (ag *agent) end() agentExit {
	_ = ag.conn.Close()
	var x agentExit
	select {
	case x = <-ag.done:
	case <-time.After(acpExitGrace):
		ag.stop()
		x = <-ag.done
	}
	ag.stop()
	ag.release()
	return x
}

func (ag *agent) release() {
	if ag.own != "" {
		_ = os.RemoveAll(ag.own)
		ag.own = ""
	}
	if ag.untrack != nil {
		ag.untrack()
		ag.untrack = nil
	}
}

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
		go ag.end()
	}
	return nil
}

// put keeps ag for key, or ends it when the pool is full or off.
func (p *agents) put(key agentKey, ag *agent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n >= p.max {
		go ag.end()
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
				ag.end()
				return
			}
		}
		p.mu.Unlock()
	})
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
			go func() { defer wg.Done(); ag.end() }()
		}
	}
	wg.Wait()
}
