//go:build unix

package main

import (
	"os"
	"syscall"
)

// exitStatus is the child's exit code, or 128+n when signal n ended it (what a shell and the
// engine's init report).
func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
