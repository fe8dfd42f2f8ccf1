package main

import (
	"net"
	"testing"
	"time"
)

// TestDial: dial reports a listening address as connected (status 0) after its delay, and a
// closed port as blocked (blockedExit) only after its whole window.
func TestDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := ln.Addr().String()
	_ = ln.Close()
	go func() { _ = serve(open, time.Hour) }()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shut := closed.Addr().String()
	_ = closed.Close()

	for _, tc := range []struct {
		name, addr string
		want       int
		least      time.Duration
	}{{"listening", open, 0, dialDelay}, {"closed", shut, blockedExit, dialWindow}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			if got := dial(tc.addr); got != tc.want {
				t.Errorf("dial %s = %d, want %d", tc.addr, got, tc.want)
			}
			if took := time.Since(start); took < tc.least {
				t.Errorf("dial %s returned after %v, before %v", tc.addr, took, tc.least)
			}
		})
	}
}
