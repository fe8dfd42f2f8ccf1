package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Spare agents: a `cline --acp` process in a container answers its first prompt only after the
// container started and the CLI initialized (1–2 s for the real CLI, docs/acp.md §11), which a
// warm host call never pays. A spare is that process started ahead, for the next conversation's
// first turn: after a container first turn of a conversation with a shape (Turn.Shape; a key-less
// one's too), the engine starts up to the spares the server keeps — a new container, with a settings
// copy and a session data dir of its own (Turn.Spare makes them from what the host wrote before
// the turn's run, never from what the run could have changed) — and sends it `initialize`. The
// next first turn with the same key (tool class, directory, provider, key and shape) takes it,
// opens its session there and makes it the conversation's own: its data dir becomes the
// session's. A spare serves exactly one call, which no call before it ever ran in; it holds
// nothing of any call until its claim (an initialized process has no session, no prompt). An
// unclaimed spare ends after the warm idle time, or with the server (Close; its container and
// directories carry the instance label and the lifeline's tracking for a crash).

// Spare is a ready-made run for a spare agent (Turn.Spare): the spec of the turn it was made
// from with the call's own directories replaced by fresh ones, the settings copy's directory
// (Own: removed with the process), and the session data dir the claiming call takes over (Data:
// removed if no call claims it; DataDir is its path). Blind, when set, points the settings copy's
// provider at an address where nothing listens (true) and back (false), for the warm-up of a
// spare whose key is inside its container (warmup.go).
type Spare struct {
	Spec    sandbox.Spec
	Own     Owned
	Data    Owned
	DataDir string
	Blind   func(on bool) error
}

// spareInitTimeout bounds a spare's start and initialize; a spare that takes longer is dropped.
const spareInitTimeout = 2 * time.Minute

// spare is an initialized process waiting for its call.
type spare struct {
	ag   *agent
	data Owned
	idle *time.Timer
	// disarmed: its egress grant lends nothing until the claim re-arms it (a warmed key-less spare).
	disarmed bool
	// warmed: it went through its CLI's request path before its claim (warmup.go).
	warmed bool
	blind  func(on bool) error
}

// end ends an unclaimed spare: its process (and so its container), its directories.
func (s *spare) end() {
	s.ag.end(time.Time{})
	s.data.Release()
}

// spares are the spare agents of an engine, at most max in all.
type spares struct {
	max    int
	idle   time.Duration
	log    *slog.Logger
	mu     sync.Mutex
	m      map[agentKey][]*spare
	n      int // ready and starting
	closed bool
	wg     sync.WaitGroup
	// stop ends the starts in flight (close); set with the first fill.
	ctx  context.Context
	stop context.CancelFunc
}

// spareDelay is how long after the turn that fills them the spares start: the rest of the call
// (the merge-back, the session's record, the answer) comes first.
const spareDelay = 50 * time.Millisecond

// take returns a ready spare for key, or nil.
func (p *spares) take(key agentKey) *spare {
	p.mu.Lock()
	defer p.mu.Unlock()
	for list := p.m[key]; len(list) > 0; list = p.m[key] {
		s := list[0]
		p.m[key] = list[1:]
		p.n--
		s.idle.Stop()
		if s.ag.alive() {
			return s
		}
		go s.end()
	}
	return nil
}

// fill starts spares for key in the background until the engine keeps max of them: each from
// mk, on exec, warmed up with w (warmup.go; keyless: the proxy holds their key).
func (p *spares) fill(key agentKey, exec sandbox.Executor, spec sandbox.Spec, mk func(sandbox.Spec) (Spare, error), w warmUp, keyless bool, e *ACP) {
	for {
		p.mu.Lock()
		if p.closed || p.n >= p.max {
			p.mu.Unlock()
			return
		}
		p.n++
		p.wg.Add(1)
		if p.ctx == nil {
			p.ctx, p.stop = context.WithCancel(context.Background())
		}
		ctx := p.ctx
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			// After the call's answer: the spare's files and container would otherwise share the
			// machine with what is left of the call that fills it.
			select {
			case <-ctx.Done():
				p.park(key, nil)
				return
			case <-time.After(spareDelay):
			}
			s := p.start(ctx, exec, spec, mk, e)
			if s != nil {
				s = w.spare(ctx, s, keyless, e)
			}
			if s != nil {
				s = w.openAhead(ctx, s, e)
			}
			p.park(key, s)
		}()
	}
}

// start makes one spare and initializes it; nil when it could not.
func (p *spares) start(ctx context.Context, exec sandbox.Executor, spec sandbox.Spec, mk func(sandbox.Spec) (Spare, error), e *ACP) *spare {
	sp, err := mk(spec)
	if err != nil {
		e.log.Warn("could not prepare a spare Cline process", "err", err)
		return nil
	}
	sp.Spec.Standby = true // it takes no room a call needs
	ag := startAgent(exec, sp.Spec, e.log)
	ag.own = sp.Own
	s := &spare{ag: ag, data: sp.Data, blind: sp.Blind}
	s.ag.dataDir = sp.DataDir
	ctx, cancel := context.WithTimeout(ctx, spareInitTimeout)
	defer cancel()
	if _, err := ag.conn.Initialize(ctx); err != nil {
		x := ag.end(time.Time{})
		s.data.Release()
		e.log.Warn("a spare Cline process did not initialize", "err", err, "run", x.err)
		return nil
	}
	ag.ready = true
	return s
}

// park keeps a started spare (nil: its start failed) for key, or ends it when the engine closed.
func (p *spares) park(key agentKey, s *spare) {
	p.mu.Lock()
	if s == nil || p.closed {
		p.n--
		p.mu.Unlock()
		if s != nil {
			s.end() // close waits for it
		}
		return
	}
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[agentKey][]*spare{}
	}
	p.m[key] = append(p.m[key], s)
	p.log.Debug("a spare Cline process is ready", "warmedUp", s.warmed, "dataDir", s.ag.dataDir)
	s.idle = time.AfterFunc(p.idle, func() {
		p.mu.Lock()
		list := p.m[key]
		for i, x := range list {
			if x == s {
				p.m[key] = append(list[:i:i], list[i+1:]...)
				p.n--
				p.mu.Unlock()
				s.end()
				return
			}
		}
		p.mu.Unlock()
	})
}

// makeRoom ends every ready spare and gives up those being started, and returns how many it
// ended: the room they hold or wait for is wanted by a call. Spares start again after the next
// turn that fills them.
func (p *spares) makeRoom() int {
	p.mu.Lock()
	m := p.m
	p.m = nil
	n := 0
	for _, list := range m {
		for _, s := range list {
			s.idle.Stop()
			p.n--
			n++
		}
	}
	if p.stop != nil && !p.closed {
		p.stop() // the starts in flight end; they were counted in n
		p.ctx, p.stop = context.WithCancel(context.Background())
	}
	p.mu.Unlock()
	for _, list := range m {
		for _, s := range list {
			go s.end()
		}
	}
	return n
}

// close ends every spare, and those still starting once they started.
func (p *spares) close() {
	p.mu.Lock()
	p.closed = true
	m := p.m
	p.m = nil
	if p.stop != nil {
		p.stop()
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, list := range m {
		for _, s := range list {
			s.idle.Stop()
			wg.Add(1)
			go func() { defer wg.Done(); s.end() }()
		}
	}
	wg.Wait()
	p.wg.Wait()
}
