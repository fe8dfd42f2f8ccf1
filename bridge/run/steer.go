package run

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"
)

// Steering. A running call on the ACP engine takes messages from its caller (cline_job's steer):
// each is sent as the session's next user prompt at the next turn boundary (bridge/run/engine) — after the running
// turn ends, before the call answers — and the call's answer then carries every turn's. A call
// whose engine takes no turns (--json) delivers none; Close hands them back to be reported.

// Bounds of steering.
const (
	MaxSteerChars = 4000 // characters of one message
	maxSteerQueue = 8    // messages waiting, and turns a call adds
)

// Steer is the queue of steer messages of one call. The zero value is not usable: NewSteer.
type Steer struct {
	mu        sync.Mutex
	queue     []string
	delivered int
	closed    bool
}

// NewSteer returns an empty queue.
func NewSteer() *Steer { return &Steer{} }

// Errors of Push.
var (
	ErrSteerClosed = errors.New("the call has finished: a steer message can no longer be delivered")
	ErrSteerFull   = fmt.Errorf("%d steer messages are already waiting or were delivered: no more for this call", maxSteerQueue)
)

// Push queues a message for the next turn boundary.
func (s *Steer) Push(msg string) error {
	if msg == "" || !utf8.ValidString(msg) || utf8.RuneCountInString(msg) > MaxSteerChars {
		return fmt.Errorf("a steer message is 1 to %d characters of UTF-8 text", MaxSteerChars)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSteerClosed
	}
	if len(s.queue)+s.delivered >= maxSteerQueue {
		return ErrSteerFull
	}
	s.queue = append(s.queue, msg)
	return nil
}

func (s *Steer) take() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 || s.closed {
		return "", false
	}
	msg := s.queue[0]
	s.queue = s.queue[1:]
	s.delivered++
	return msg, true
}

// Close ends the queue and returns the messages never delivered.
func (s *Steer) Close() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	left := s.queue
	s.queue = nil
	return left
}
