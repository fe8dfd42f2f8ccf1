package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

// The probe's timing: a dial waits dialDelay for the cluster to apply the NetworkPolicy made for
// its pod, then tries to connect every dialEvery until dialWindow has passed since it started.
const (
	dialDelay   = 3 * time.Second
	dialWindow  = 6 * time.Second
	dialEvery   = 500 * time.Millisecond
	dialTimeout = time.Second
)

// blockedExit is dial's status when no connection succeeded.
const blockedExit = 3

// serve accepts TCP connections on addr and closes each at once, until life has passed (a probe
// pod must end by itself if nobody deletes it).
func serve(addr string, life time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println("listening", ln.Addr())
	go func() {
		time.Sleep(life)
		os.Exit(0)
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		_ = c.Close()
	}
}

// dial reports whether a TCP connection to addr succeeds within the window, on stdout and in
// the termination message: "connected" (status 0) or "blocked: <last error>" (blockedExit).
func dial(addr string) int {
	start := time.Now()
	time.Sleep(dialDelay)
	var last error
	for time.Since(start) < dialWindow {
		c, err := net.DialTimeout("tcp", addr, dialTimeout)
		if err == nil {
			_ = c.Close()
			report("connected")
			return 0
		}
		last = err
		time.Sleep(dialEvery)
	}
	report(fmt.Sprintf("blocked: %v", last))
	return blockedExit
}

// report writes msg to stdout and to the kubelet's termination log (never a new file).
func report(msg string) {
	fmt.Println(msg)
	if f, err := os.OpenFile(terminationLog, os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		_, _ = f.WriteString(msg)
		_ = f.Close()
	}
}
