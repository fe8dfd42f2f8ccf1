package run

import (
	"errors"
	"strings"
	"testing"
)

// TestSteerQueue: a steer queue takes bounded messages in order, at most maxSteerQueue per call
// (delivered ones count), and none once the call has finished, handing back what was left.
func TestSteerQueue(t *testing.T) {
	s := NewSteer()
	for _, bad := range []string{"", strings.Repeat("x", MaxSteerChars+1), "\xff"} {
		if err := s.Push(bad); err == nil {
			t.Errorf("Push(%.20q) took it", bad)
		}
	}
	if err := s.Push(strings.Repeat("é", MaxSteerChars)); err != nil {
		t.Errorf("a message of %d characters: %v", MaxSteerChars, err)
	}
	if m, ok := s.take(); !ok || len([]rune(m)) != MaxSteerChars {
		t.Fatalf("take: %v", ok)
	}
	for i := 1; i < maxSteerQueue; i++ {
		if err := s.Push("m"); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	if err := s.Push("one too many"); !errors.Is(err, ErrSteerFull) {
		t.Errorf("message %d: %v, want ErrSteerFull", maxSteerQueue+1, err)
	}
	if left := s.Close(); len(left) != maxSteerQueue-1 {
		t.Errorf("Close handed back %d, want %d", len(left), maxSteerQueue-1)
	}
	if err := s.Push("late"); !errors.Is(err, ErrSteerClosed) {
		t.Errorf("after Close: %v", err)
	}
	if _, ok := s.take(); ok {
		t.Error("take after Close")
	}
}
