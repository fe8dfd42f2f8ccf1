package settings

import (
	"container/list"
	"context"
	"sync"
)

// rwLock is a fair (FIFO) readers-writer lock whose acquisition can be abandoned through a context.
//
// A Store's default runs share the read lock for their run (their CLI writes the user's file); a merge-back
// that has refreshed credentials to write holds the write lock for that short write only. Waiters are
// served strictly in arrival order: a reader that arrives while a writer is queued waits behind that writer, so a
// continuous stream of readers can never starve a writer; consecutive queued readers are admitted together.
// A waiter whose context ends leaves the queue at once and returns ctx.Err(); it leaves no slot behind, and the
// waiters behind it are re-examined immediately. The zero value is an unlocked lock. It must not be copied after
// first use. Unlocking a lock that is not held panics, like sync.RWMutex.
type rwLock struct {
	mu      sync.Mutex
	readers int  // readers holding the lock
	writer  bool // a writer holds the lock
	queue   list.List
}

type waiter struct {
	write   bool
	ready   chan struct{} // closed when the lock was granted
	granted bool          // guarded by rwLock.mu
}

// RLock acquires the lock shared. It returns ctx.Err() without holding the lock when ctx ends first
// (also when ctx is already done on entry).
func (l *rwLock) RLock(ctx context.Context) error { return l.acquire(ctx, false) }

// Lock acquires the lock exclusively. It returns ctx.Err() without holding the lock when ctx ends first.
func (l *rwLock) Lock(ctx context.Context) error { return l.acquire(ctx, true) }

// RUnlock releases one shared hold.
func (l *rwLock) RUnlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.readers == 0 {
		panic("settings: RUnlock of rwLock not read-locked")
	}
	l.readers--
	l.grant()
}

// Unlock releases the exclusive hold.
func (l *rwLock) Unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.writer {
		panic("settings: Unlock of rwLock not write-locked")
	}
	l.writer = false
	l.grant()
}

func (l *rwLock) acquire(ctx context.Context, write bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	if l.queue.Len() == 0 && l.free(write) {
		l.take(write)
		l.mu.Unlock()
		return nil
	}
	w := &waiter{write: write, ready: make(chan struct{})}
	elem := l.queue.PushBack(w)
	l.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.granted {
		// Granted while the context ended: give it back so the caller sees a clean "cancelled".
		if write {
			l.writer = false
		} else {
			l.readers--
		}
	} else {
		l.queue.Remove(elem)
	}
	l.grant()
	return ctx.Err()
}

// free reports whether a waiter of this kind could hold the lock now. Caller holds l.mu.
func (l *rwLock) free(write bool) bool {
	if write {
		return !l.writer && l.readers == 0
	}
	return !l.writer
}

func (l *rwLock) take(write bool) {
	if write {
		l.writer = true
	} else {
		l.readers++
	}
}

// grant admits waiters from the head of the queue for as long as they fit. Caller holds l.mu.
func (l *rwLock) grant() {
	for e := l.queue.Front(); e != nil; e = l.queue.Front() {
		w := e.Value.(*waiter)
		if !l.free(w.write) {
			return
		}
		l.queue.Remove(e)
		l.take(w.write)
		w.granted = true
		close(w.ready)
	}
}

// queued reports how many callers wait (for tests: a cancelled waiter must not leave a slot behind).
func (l *rwLock) queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.queue.Len()
}
