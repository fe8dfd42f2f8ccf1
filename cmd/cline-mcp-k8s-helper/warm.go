package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// maxHeader bounds a warm pod's header line.
const maxHeader = 1 << 20

// warmHeader is what a warm pod's main container reads first on its stdin: what a cold pod's
// container spec says (sandbox/kubernetes warmHeader).
type warmHeader struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// End is the run's nonce: when the program has ended (and every process it left is gone),
	// warm writes a frame of stream 3 holding "END code" on stdout, so that the executor learns
	// the exit from the log instead of the pod's status, which the kubelet reports up to a
	// second later.
	End string `json:"end"`
}

// endStream is the stream number of the end frame.
const endStream = 3

// warm is the main container of a warm pod: it waits for one line on stdin (the run's command,
// environment and directory, JSON), then behaves as run, the rest of stdin being the program's.
// With wait it first waits for the egress sidecar's listener, as run --wait.
func warm(r io.Reader, wait string) int {
	// Not dumpable: the run's processes (same uid) cannot open /proc/1/fd/1, the container's
	// stdout, and forge frames or the end frame there; nor read the nonce from /proc/1/mem.
	notDumpable()
	line, err := readLine(r, maxHeader)
	var h warmHeader
	if err == nil {
		err = json.Unmarshal(line, &h)
	}
	if err == nil && (len(h.Args) == 0 || h.Args[0] == "") {
		err = errors.New("no command")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cline-mcp-k8s-helper warm: no work:", err)
		return 2
	}
	for _, kv := range h.Env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return notStarted(fmt.Errorf("environment %q: %w", k, err))
		}
	}
	if h.Dir != "" {
		if err := os.Chdir(h.Dir); err != nil {
			return notStarted(err)
		}
	}
	if wait != "" {
		if err := waitListening(wait, waitBound); err != nil {
			return startFail(err)
		}
	}
	code := run(h.Args)
	if h.End != "" && os.Getpid() == 1 {
		reapAll()
		var mu sync.Mutex
		_, _ = fmt.Fprintf(framer{&mu, os.Stdout, endStream}, "%s %d", h.End, code)
	}
	return code
}

// readLine reads up to the first newline one byte at a time: what follows stays unread for the
// program.
func readLine(r io.Reader, limit int) ([]byte, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < limit {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				return line, nil
			}
			line = append(line, b[0])
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("stdin ended before the header's end: %w", err)
		}
	}
	return nil, fmt.Errorf("header longer than %d bytes", limit)
}

// notStarted reports a program that cannot start in the run's environment or directory as run
// reports one it cannot execute, and returns 126.
func notStarted(err error) int {
	return failed(fmt.Sprintf("%s %v", startFailed, err), 126)
}
