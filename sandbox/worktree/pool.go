package worktree

import (
	"context"
	"errors"
	"fmt"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// DefaultPoolIdle is how long an idle pooled worktree is kept when Manager.PoolIdle is zero.
const DefaultPoolIdle = 5 * time.Minute

// pool holds a Manager's idle worktrees by repository (git common dir). A slot is either idle
// here or owned by exactly one Worktree handle, never both: take removes it under mu.
type pool struct {
	mu      sync.Mutex
	closed  bool
	idle    map[string][]*idleSlot // oldest first
	pending sync.WaitGroup         // expiry removals in flight
	// usesFilters caches, per commit, whether its attributes name a filter (see unpoolable).
	usesFilters map[string]bool
	// removed, when set (tests), is told the path of every slot the pool removed by itself.
	removed func(path string)
}

type idleSlot struct {
	s     *slot
	timer *time.Timer
}

// Acquire returns a worktree of repoDir's HEAD commit for one call; Release (or Remove) ends
// its use. With PoolSize 0 it is Add. Otherwise it takes the repository's most recently
// released idle worktree (one already at the commit first), prepares it (prepare: every
// planted .git and every untracked or ignored file removed, tracked files restored and moved
// to the commit — only the files that differ are rewritten — and the result verified) and
// marks it Reused. A pooled worktree that fails any check is removed by its recorded paths and
// the next one is tried; the reasons are in Worktree.Discarded. Without a usable idle worktree
// a fresh one is created as Add does. Repositories whose config defines filter programs used by
// the commit's attributes (git.Git LFS) or a sparse checkout are never pooled: moving a worktree
// would not give what `git worktree add` checks out. Errors are Add's. Two calls never get the
// same worktree.
func (m *Manager) Acquire(ctx context.Context, repoDir string) (*Worktree, error) {
	if m.PoolSize <= 0 {
		return m.Add(ctx, repoDir)
	}
	src, commit, err := m.source(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	if why := m.unpoolable(ctx, src, commit); why != "" {
		m.log().Debug("worktree not pooled", "repo", src.Top, "why", why)
		return m.create(ctx, src, commit, false)
	}
	var discarded []error
	for {
		s := m.pool.take(src.CommonDir, commit)
		if s == nil {
			break
		}
		err := m.prepare(ctx, s, src, commit)
		if err == nil {
			wt := s.handle(m)
			wt.Reused, wt.Discarded, wt.Cleaned = true, discarded, s.found
			return wt, nil
		}
		rerr := m.removeRecorded(ctx, s.path, s.repo.CommonDir, s.repo.GitDir, s.entry)
		if ctx.Err() != nil {
			return nil, &SetupError{Repo: src.Top, Err: errors.Join(fmt.Errorf("prepare pooled worktree %s: %w", s.path, err), rerr)}
		}
		err = fmt.Errorf("pooled worktree %s: %w", s.path, err)
		if rerr != nil {
			err = fmt.Errorf("%w; removing it failed: %v", err, rerr)
		}
		m.log().Warn("pooled worktree discarded", "err", err)
		discarded = append(discarded, err)
	}
	wt, err := m.create(ctx, src, commit, true)
	if err != nil {
		return nil, err
	}
	wt.Discarded = discarded
	return wt, nil
}

// Released is what Release did with a worktree.
type Released struct {
	// Pooled is set when the worktree went back to the pool instead of being removed.
	Pooled bool
	// Discarded, when set, is why a worktree that could have been pooled was removed instead:
	// its git metadata is not what was recorded (the run rewrote a pointer, planted a hook...).
	Discarded error
}

// Release ends the caller's use of the worktree. A worktree from Acquire with the pool on goes
// back to the pool when its recorded git metadata is unchanged (the work tree's .git file, the
// worktree's git dir: gitdir, commondir, HEAD, no new file — see slot.check), the Manager is not
// closed and the repository has fewer than PoolSize idle worktrees; it keeps what the run left
// in its files until Acquire takes it again (and undoes it first) or it expires after PoolIdle.
// Every other worktree is removed as Remove does, which is also what an error reports (a
// *CleanupError). Like Remove it runs to completion on a cancelled ctx and is idempotent.
func (w *Worktree) Release(ctx context.Context) (Released, error) {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return Released{}, nil
	}
	var rel Released
	if s := w.slot; s != nil {
		if rel.Discarded = s.check(); rel.Discarded == nil && w.m.pool.put(w.m, s) {
			w.done = true
			w.mu.Unlock()
			return Released{Pooled: true}, nil
		}
	}
	w.mu.Unlock()
	return rel, w.Remove(ctx)
}

// Close removes every idle worktree and makes later Releases remove theirs. It waits for
// removals the pool started on its own, runs to completion on a cancelled ctx like Remove, and
// returns their joined failures. Close is idempotent; Acquire keeps working without a pool.
func (m *Manager) Close(ctx context.Context) error {
	p := &m.pool
	p.mu.Lock()
	p.closed = true
	var all []*slot
	for _, list := range p.idle {
		for _, is := range list {
			is.timer.Stop()
			all = append(all, is.s)
		}
	}
	p.idle = nil
	p.mu.Unlock()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() { errs[i] = m.removeSlot(ctx, s) })
	}
	wg.Wait()
	p.pending.Wait()
	return errors.Join(errs...)
}

// put makes s idle for PoolIdle; false means there is no room (or the pool is closed).
func (p *pool) put(m *Manager, s *slot) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := s.repo.CommonDir
	if p.closed || len(p.idle[key]) >= m.PoolSize {
		return false
	}
	if p.idle == nil {
		p.idle = map[string][]*idleSlot{}
	}
	idle := m.PoolIdle
	if idle <= 0 {
		idle = DefaultPoolIdle
	}
	is := &idleSlot{s: s}
	is.timer = time.AfterFunc(idle, func() { p.expire(m, is) })
	p.idle[key] = append(p.idle[key], is)
	return true
}

// take removes and returns an idle slot of the repository: the newest one at commit, else the
// newest; nil when there is none.
func (p *pool) take(commonDir, commit string) *slot {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[commonDir]
	if len(list) == 0 {
		return nil
	}
	i := len(list) - 1
	for j := i; j >= 0; j-- {
		if list[j].s.commit == commit {
			i = j
			break
		}
	}
	is := list[i]
	p.idle[commonDir] = slices.Delete(list, i, i+1)
	is.timer.Stop() // if it already fired, expire finds the slot gone and does nothing
	return is.s
}

// expire removes an idle slot whose time is up, unless take or Close got it first.
func (p *pool) expire(m *Manager, is *idleSlot) {
	p.mu.Lock()
	key := is.s.repo.CommonDir
	i := slices.Index(p.idle[key], is)
	if p.closed || i < 0 {
		p.mu.Unlock()
		return
	}
	p.idle[key] = slices.Delete(p.idle[key], i, i+1)
	p.pending.Add(1)
	p.mu.Unlock()
	defer p.pending.Done()
	if err := m.removeSlot(context.Background(), is.s); err != nil {
		m.log().Warn("expired pooled worktree not removed", "err", err)
		return
	}
	m.log().Debug("expired pooled worktree removed", "path", is.s.path)
}

// removeSlot removes a slot that no handle owns, by its recorded paths.
func (m *Manager) removeSlot(ctx context.Context, s *slot) error {
	err := m.removeRecorded(ctx, s.path, s.repo.CommonDir, s.repo.GitDir, s.entry)
	if err == nil && m.pool.removed != nil {
		m.pool.removed(s.path)
	}
	return err
}

func (m *Manager) log() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}

// unpoolable says why src's worktrees at commit cannot be pooled, or "". A sparse checkout and
// filter programs (the commit's attributes naming a filter while the config defines one: Git
// LFS) would make a moved worktree differ from a fresh `git worktree add`, which runs them:
// the pool runs no program a config names.
func (m *Manager) unpoolable(ctx context.Context, src git.Repo, commit string) string {
	sparse, filters := src.PoolBlocker()
	if sparse {
		return "core.sparseCheckout is on"
	}
	if !filters {
		return ""
	}
	p := &m.pool
	p.mu.Lock()
	uses, ok := p.usesFilters[commit]
	p.mu.Unlock()
	if !ok {
		var err error
		if uses, err = m.git().AttributesUseFilters(ctx, src, commit); err != nil {
			return "its attributes could not be read: " + err.Error()
		}
		p.mu.Lock()
		if p.usesFilters == nil || len(p.usesFilters) > 1024 {
			p.usesFilters = map[string]bool{}
		}
		p.usesFilters[commit] = uses
		p.mu.Unlock()
	}
	if uses {
		return "its attributes use a filter program the config defines (git.Git LFS?)"
	}
	return ""
}
