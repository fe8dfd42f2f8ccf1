package main

import (
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// signals reproduces the local backend: SIGINT exits 0 at once without a terminal line; the
// first SIGTERM is only remembered (the run goes on and, if it completes, ends with run_aborted
// local_abort); a second SIGTERM exits 1 without writing anything.
type signals struct {
	terms    atomic.Int32
	term     chan struct{}
	termOnce sync.Once
	streams  []*stream
}

// startSignals installs the handlers; it must run before the first line is printed so that a
// test which waits for output can rely on them.
func startSignals(streams ...*stream) *signals {
	s := &signals{term: make(chan struct{}), streams: streams}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range ch {
			if sig == syscall.SIGINT {
				s.exit(0)
			}
			if s.terms.Add(1) >= 2 {
				s.exit(1)
			}
			s.termOnce.Do(func() { close(s.term) })
		}
	}()
	return s
}

// exit takes the output locks so no half line is written, then exits. A writer blocked on a
// full pipe must not keep the process alive, so the locks are given up after a second.
func (s *signals) exit(code int) {
	deadline := time.Now().Add(time.Second)
	for _, st := range s.streams {
		for !st.mu.TryLock() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	os.Exit(code)
}

func (s *signals) termReceived() bool { return s.terms.Load() > 0 }

// waitTerm blocks until the first SIGTERM or until max has passed.
func (s *signals) waitTerm(max time.Duration) {
	select {
	case <-s.term:
	case <-time.After(max):
	}
}

// blockForever is a model call that never returns; only signals end the process.
func (s *signals) blockForever() {
	for {
		time.Sleep(time.Hour)
	}
}
