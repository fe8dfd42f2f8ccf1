package main

import "os"

// processGroup has no meaning on Windows (a Job Object groups the tree); RECORD says 0.
func processGroup() int { return 0 }

// privilegedProbes: the probes are Linux container checks; on Windows they report "unsupported".
func privilegedProbes(string) obj {
	return obj{{"mknod_null", "unsupported"}, {"setuid_0", "unsupported"}, {"raw_socket", "unsupported"}}
}

// selfTerminate ends the process the way a SIGTERM would end it on Unix (exit 143).
func selfTerminate() { os.Exit(143) }

// makeFIFO: Windows has no named pipes in the file system.
func makeFIFO(string) error { return os.ErrInvalid }
