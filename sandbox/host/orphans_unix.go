//go:build unix

package host

import "golang.org/x/sys/unix"

// pgidOf is the process group of pid.
func pgidOf(pid int) (int, error) { return unix.Getpgid(pid) }
