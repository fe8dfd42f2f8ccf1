package settings

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// recorder notes the order in which goroutines got the lock.
type recorder struct {
	mu    sync.Mutex
	order []string
}

func (r *recorder) add(name string) {
	r.mu.Lock()
	r.order = append(r.order, name)
	r.mu.Unlock()
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// spawn starts one goroutine that takes the lock, records its name, waits for release (if non-nil) and unlocks.
// It returns after the goroutine is durably blocked or done, so queue order equals spawn order.
func spawn(t *testing.T, l *rwLock, rec *recorder, name string, write bool, release <-chan struct{}) {
	t.Helper()
	go func() {
		acquire, unlock := l.RLock, l.RUnlock
		if write {
			acquire, unlock = l.Lock, l.Unlock
		}
		if err := acquire(context.Background()); err != nil {
			t.Errorf("%s: got %v, want nil", name, err)
			return
		}
		rec.add(name)
		if release != nil {
			<-release
		}
		unlock()
	}()
	synctest.Wait()
}

func TestRWLockFIFOOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l rwLock
		rec := &recorder{}
		if err := l.Lock(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			name  string
			write bool
		}{{"r1", false}, {"r2", false}, {"w3", true}, {"r4", false}, {"r5", false}, {"w6", true}, {"r7", false}} {
			spawn(t, &l, rec, w.name, w.write, nil)
		}
		if got := rec.got(); len(got) != 0 {
			t.Fatalf("got %v acquired while a writer held the lock, want none", got)
		}
		if got := l.queued(); got != 7 {
			t.Fatalf("got %d queued, want 7", got)
		}
		l.Unlock()
		synctest.Wait()
		got := rec.got()
		// Readers admitted in one batch may record in either order; groups must follow arrival order.
		groups := [][]string{{"r1", "r2"}, {"w3"}, {"r4", "r5"}, {"w6"}, {"r7"}}
		i := 0
		for _, g := range groups {
			if i+len(g) > len(got) {
				t.Fatalf("got order %v, want groups %v", got, groups)
			}
			part := slices.Clone(got[i : i+len(g)])
			slices.Sort(part)
			if !slices.Equal(part, g) {
				t.Fatalf("got order %v, want groups %v", got, groups)
			}
			i += len(g)
		}
	})
}

func TestRWLockReaderWaitsBehindQueuedWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l rwLock
		rec := &recorder{}
		releaseR0, releaseW1 := make(chan struct{}), make(chan struct{})
		spawn(t, &l, rec, "r0", false, releaseR0)
		spawn(t, &l, rec, "w1", true, releaseW1)
		spawn(t, &l, rec, "r2", false, nil)
		if got, want := rec.got(), []string{"r0"}; !slices.Equal(got, want) {
			t.Fatalf("got %v holding, want %v (a reader must not pass a queued writer)", got, want)
		}
		close(releaseR0)
		synctest.Wait()
		if got, want := rec.got(), []string{"r0", "w1"}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		close(releaseW1)
		synctest.Wait()
		if got, want := rec.got(), []string{"r0", "w1", "r2"}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

// TestRWLockNoWriterStarvation runs a chain of overlapping readers: reader i+1 arrives before reader i lets go,
// so without fairness the lock would never be free of readers. A writer that queues during the chain must get in
// right after the readers that arrived before it, not after the whole chain.
func TestRWLockNoWriterStarvation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l rwLock
		const chain = 500
		var acquired atomic.Int64
		var atWriter atomic.Int64
		atWriter.Store(-1)
		release := make([]chan struct{}, chain)
		startReader := func(i int) {
			release[i] = make(chan struct{})
			go func() {
				if err := l.RLock(context.Background()); err != nil {
					t.Errorf("reader %d: %v", i, err)
					return
				}
				acquired.Add(1)
				<-release[i]
				l.RUnlock()
			}()
			synctest.Wait()
		}
		startReader(0)
		for i := range chain - 1 {
			if i == 10 {
				go func() {
					if err := l.Lock(context.Background()); err != nil {
						t.Errorf("writer: %v", err)
						return
					}
					atWriter.Store(acquired.Load())
					l.Unlock()
				}()
				synctest.Wait()
			}
			startReader(i + 1) // arrives while reader i still holds the lock
			close(release[i])
			synctest.Wait()
		}
		close(release[chain-1])
		synctest.Wait()
		if got := atWriter.Load(); got != 11 {
			t.Errorf("got writer admitted after %d readers, want 11 (those that arrived before it)", got)
		}
		if got := acquired.Load(); got != chain {
			t.Errorf("got %d readers, want %d", got, chain)
		}
	})
}

func TestRWLockCancelWhileQueued(t *testing.T) {
	t.Run("writer cancelled behind a writer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var l rwLock
			if err := l.Lock(t.Context()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() { errc <- l.Lock(ctx) }()
			synctest.Wait()
			rec := &recorder{}
			spawn(t, &l, rec, "r2", false, nil)
			cancel()
			synctest.Wait()
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("got %v, want context.Canceled", err)
				}
			default:
				t.Fatal("cancelled waiter still blocked while the lock is held, want dequeued at once")
			}
			if got := l.queued(); got != 1 {
				t.Fatalf("got %d queued, want 1 (only r2)", got)
			}
			l.Unlock()
			synctest.Wait()
			if got, want := rec.got(), []string{"r2"}; !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			if got := l.queued(); got != 0 {
				t.Fatalf("got %d queued, want 0", got)
			}
		})
	})
	t.Run("cancelled writer unblocks the readers behind it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var l rwLock
			rec := &recorder{}
			release := make(chan struct{})
			spawn(t, &l, rec, "r0", false, release)
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() { errc <- l.Lock(ctx) }()
			synctest.Wait()
			spawn(t, &l, rec, "r2", false, nil)
			if got, want := rec.got(), []string{"r0"}; !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			cancel()
			synctest.Wait()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			// r0 still holds the lock; r2 shares it now that no writer is ahead.
			if got, want := rec.got(), []string{"r0", "r2"}; !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			close(release)
			synctest.Wait()
			if err := l.Lock(t.Context()); err != nil {
				t.Fatalf("got %v, want the lock free", err)
			}
			l.Unlock()
		})
	})
	t.Run("already cancelled context never acquires", func(t *testing.T) {
		var l rwLock
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := l.RLock(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("RLock: got %v, want context.Canceled", err)
		}
		if err := l.Lock(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Lock: got %v, want context.Canceled", err)
		}
		if err := l.Lock(t.Context()); err != nil { // nothing leaked: the lock is free
			t.Fatal(err)
		}
		l.Unlock()
	})
	t.Run("deadline while queued", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var l rwLock
			if err := l.RLock(t.Context()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			if err := l.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want context.DeadlineExceeded", err)
			}
			l.RUnlock()
			if got := l.queued(); got != 0 {
				t.Fatalf("got %d queued, want 0", got)
			}
		})
	})
}

// TestRWLockCancelRacesGrant cancels a waiter in the same instant the lock is handed to it. Whichever way the
// race goes, the caller must either hold the lock (nil) or not hold it (ctx.Err()), never leak it.
func TestRWLockCancelRacesGrant(t *testing.T) {
	for i := range 50 {
		synctest.Test(t, func(t *testing.T) {
			var l rwLock
			if err := l.Lock(t.Context()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			write := i%2 == 0
			go func() {
				if write {
					errc <- l.Lock(ctx)
				} else {
					errc <- l.RLock(ctx)
				}
			}()
			synctest.Wait()
			cancel()
			l.Unlock()
			err := <-errc
			switch {
			case err == nil && write:
				l.Unlock()
			case err == nil:
				l.RUnlock()
			case !errors.Is(err, context.Canceled):
				t.Fatalf("got %v, want nil or context.Canceled", err)
			}
			if err := l.Lock(t.Context()); err != nil {
				t.Fatalf("lock leaked: %v", err)
			}
			l.Unlock()
		})
	}
}

// TestRWLockManyGoroutines mixes 240 readers and writers, some of which give up while queued, and checks the
// invariant on every entry: a writer is alone, readers never overlap a writer.
func TestRWLockManyGoroutines(t *testing.T) {
	var l rwLock
	var readers, writers atomic.Int32
	var acquiredW, acquiredR, cancelled atomic.Int32
	var wg sync.WaitGroup
	const n = 240
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for range 20 {
				ctx := t.Context()
				if i%3 == 0 { // these callers give up at a random moment: before, while queued, or after acquiring
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					go cancel()
				}
				if rng.IntN(4) == 0 {
					if err := l.Lock(ctx); err != nil {
						cancelled.Add(1)
						continue
					}
					if w := writers.Add(1); w != 1 || readers.Load() != 0 {
						t.Errorf("writer with company: writers=%d readers=%d", w, readers.Load())
					}
					acquiredW.Add(1)
					writers.Add(-1)
					l.Unlock()
				} else {
					if err := l.RLock(ctx); err != nil {
						cancelled.Add(1)
						continue
					}
					readers.Add(1)
					if w := writers.Load(); w != 0 {
						t.Errorf("reader alongside %d writers", w)
					}
					acquiredR.Add(1)
					readers.Add(-1)
					l.RUnlock()
				}
			}
		}()
	}
	wg.Wait()
	if got := l.queued(); got != 0 {
		t.Fatalf("got %d queued after all goroutines finished, want 0", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := l.Lock(ctx); err != nil {
		t.Fatalf("lock leaked: %v", err)
	}
	l.Unlock()
	t.Logf("writes=%d reads=%d cancelled=%d", acquiredW.Load(), acquiredR.Load(), cancelled.Load())
}
