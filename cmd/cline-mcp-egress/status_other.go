//go:build !unix

package main

import "os"

// exitStatus is the child's exit code (the forwarder runs in Linux containers only).
func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 1
		}
		return 0
	}
	return ps.ExitCode()
}
