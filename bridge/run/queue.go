package run

import (
	"container/list"
	"context"
	"path/filepath"
	"sync"
)

// slots is a FIFO counting semaphore whose waits can be abandoned: at most limit holders (0 means
// no limit); waiters are served strictly in arrival order; a waiter whose context ends leaves the
// queue at once, never holds a slot, and leaves none behind. Each waiter is told its position
// (1 = next) when it queues and again whenever it moves up. The zero value has no limit.
type slots struct {
	limit int

	mu      sync.Mutex
	running int
	queue   list.List // of *slotWaiter
}

type slotWaiter struct {
	ready   chan struct{} // closed when the slot was granted
	granted bool          // guarded by slots.mu
	moved   func(position int)
}

// notice is one position report, made after slots.mu is released.
type notice struct {
	moved    func(int)
	position int
}

// acquire takes a slot, waiting in line when all are taken. moved (may be nil; it must not block)
// hears the waiter's position. It returns the function that gives the slot back (call it exactly
// once), or ctx.Err() without a slot when ctx ends first.
func (s *slots) acquire(ctx context.Context, moved func(position int)) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.queue.Len() == 0 && (s.limit <= 0 || s.running < s.limit) {
		s.running++
		s.mu.Unlock()
		return s.release, nil
	}
	w := &slotWaiter{ready: make(chan struct{}), moved: moved}
	elem := s.queue.PushBack(w)
	position := s.queue.Len()
	s.mu.Unlock()
	if moved != nil {
		moved(position)
	}

	select {
	case <-w.ready:
		return s.release, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		// Granted as the context ended: hand it on, so the caller sees a clean "cancelled".
		s.running--
	} else {
		s.queue.Remove(elem)
	}
	notes := s.grantLocked(true)
	s.mu.Unlock()
	tell(notes)
	return nil, ctx.Err()
}

func (s *slots) release() {
	s.mu.Lock()
	if s.running == 0 {
		s.mu.Unlock()
		panic("run: release of a slot that is not held")
	}
	s.running--
	notes := s.grantLocked(false)
	s.mu.Unlock()
	tell(notes)
}

// grantLocked admits waiters from the head while slots are free, and returns the new positions of
// those still waiting when the line moved (or left is set: a waiter left it). Caller holds s.mu.
func (s *slots) grantLocked(left bool) []notice {
	moved := left
	for e := s.queue.Front(); e != nil && (s.limit <= 0 || s.running < s.limit); e = s.queue.Front() {
		w := s.queue.Remove(e).(*slotWaiter)
		s.running++
		w.granted = true
		close(w.ready)
		moved = true
	}
	var notes []notice
	if moved {
		i := 0
		for e := s.queue.Front(); e != nil; e = e.Next() {
			i++
			if w := e.Value.(*slotWaiter); w.moved != nil {
				notes = append(notes, notice{w.moved, i})
			}
		}
	}
	return notes
}

func tell(notes []notice) {
	for _, n := range notes {
		n.moved(n.position)
	}
}

// waiting reports how many callers wait (for tests: a cancelled waiter must leave no trace).
func (s *slots) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queue.Len()
}

// keyedSlots runs the holders of one key one at a time (a FIFO mutex per key, with slots' queue
// positions and cancellation); different keys do not wait for each other. A key's entry exists
// only while someone holds or waits for it.
type keyedSlots struct {
	mu   sync.Mutex
	keys map[string]*keyEntry
}

type keyEntry struct {
	s    slots // limit 1
	refs int
}

// acquire takes key's slot (see slots.acquire).
func (k *keyedSlots) acquire(ctx context.Context, key string, moved func(position int)) (func(), error) {
	k.mu.Lock()
	if k.keys == nil {
		k.keys = map[string]*keyEntry{}
	}
	e := k.keys[key]
	if e == nil {
		e = &keyEntry{s: slots{limit: 1}}
		k.keys[key] = e
	}
	e.refs++
	k.mu.Unlock()
	done := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.keys, key)
		}
		k.mu.Unlock()
	}
	release, err := e.s.acquire(ctx, moved)
	if err != nil {
		done()
		return nil, err
	}
	return func() { release(); done() }, nil
}

// checkoutKey names the checkout dir is in, the way git finds it: the nearest directory, from dir
// (symlinks resolved) upwards, that holds a .git entry (a directory, or the file of a linked worktree
// or submodule). Two calls with the same key edit the same work tree. A dir outside any checkout is
// its own key. It reads the file system only (no git process), so it costs microseconds.
func checkoutKey(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	return gitTop(filepath.Clean(dir))
}
