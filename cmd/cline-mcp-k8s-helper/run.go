package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// framer writes each chunk of stream 1 (stdout) or 2 (stderr) to w behind an 8-byte header,
// Docker's multiplexed stream format: {stream, 0, 0, 0, size (big endian uint32)}.
type framer struct {
	mu     *sync.Mutex
	w      io.Writer
	stream byte
}

func (f framer) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var h [8]byte
	h[0] = f.stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(p)))
	if _, err := f.w.Write(h[:]); err != nil {
		return 0, err
	}
	return f.w.Write(p)
}

// startFailed begins the termination message (and the stderr line) of a run whose program could
// not be started; sandbox/kubernetes (helperStartFailed) knows it by this text.
const startFailed = "cline-mcp-k8s-helper run: cannot start:"

// terminationLog is the container's terminationMessagePath (the Kubernetes default): a file the
// kubelet mounts writable also on a read-only root, and reports in the container's status.
const terminationLog = "/dev/termination-log"

// run starts prog with framed output, passes signals on (the first SIGTERM as SIGINT: the real
// CLI ends a turn cleanly on SIGINT and ignores SIGTERM mid-call) and returns its exit status.
func run(prog []string) int {
	var mu sync.Mutex
	cmd := exec.Command(prog[0], prog[1:]...)
	cmd.Stdin = os.Stdin // the pod's stdin when the run has one (ACP), else /dev/null
	cmd.Stdout = framer{&mu, os.Stdout, 1}
	cmd.Stderr = framer{&mu, os.Stdout, 2}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		// On stderr it would land unframed in the log the executor reads. The termination
		// message tells the executor that the program never started (its own 127 would not).
		msg := fmt.Sprintf("%s %v", startFailed, err)
		fmt.Fprintln(cmd.Stderr, msg)
		if f, err := os.OpenFile(terminationLog, os.O_WRONLY|os.O_TRUNC, 0); err == nil { // the kubelet's, never a new file
			_, _ = f.WriteString(msg)
			_ = f.Close()
		}
		if errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	go func() {
		termed := false
		for s := range sigs {
			if s == syscall.SIGTERM && !termed {
				termed, s = true, syscall.SIGINT
			}
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	signal.Stop(sigs)
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		return 128 + int(st.Signal())
	}
	if err != nil && cmd.ProcessState == nil {
		return 1
	}
	return cmd.ProcessState.ExitCode()
}

// waitForStop blocks until SIGTERM or SIGINT.
func waitForStop() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	<-sigs
}

// waitBound bounds run --wait: the sidecar gets its grant right after it starts, before the
// volumes are filled.
const waitBound = 2 * time.Minute

// noForwarder begins the termination message of a run whose provider forwarder never listened;
// sandbox/kubernetes knows it by this text.
const noForwarder = "cline-mcp-k8s-helper run: no provider forwarder:"

// waitListening waits until addr accepts a TCP connection, at most bound.
func waitListening(addr string, bound time.Duration) error {
	end := time.Now().Add(bound)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s did not listen within %v: %v", addr, bound, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startFail reports a run that cannot start for want of its forwarder (framed on stdout and as
// the termination message) and returns its exit status.
func startFail(err error) int {
	return failed(fmt.Sprintf("%s %v", noForwarder, err), 125)
}

// failed frames msg on stdout (stream 2, as stderr), writes it as the termination message and
// returns code.
func failed(msg string, code int) int {
	var mu sync.Mutex
	fmt.Fprintln(framer{&mu, os.Stdout, 2}, msg)
	if f, ferr := os.OpenFile(terminationLog, os.O_WRONLY|os.O_TRUNC, 0); ferr == nil {
		_, _ = f.WriteString(msg)
		_ = f.Close()
	}
	return code
}
