//go:build unix

package host

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as every child the tests need: TestMain runs child mode when
// HOSTEXEC_CHILD is set (like modelcontextprotocol/go-sdk's command tests), so no second binary
// is built. Because Run passes exactly spec.Env, each spec names its mode itself.
const childEnv = "HOSTEXEC_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

func runChild(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch mode {
	case "exit":
		code, _ := strconv.Atoi(os.Getenv("HOSTEXEC_CODE"))
		fmt.Fprintf(out, "out %s\n", os.Getenv("HOSTEXEC_TAG"))
		fmt.Fprintf(os.Stderr, "err %s\n", os.Getenv("HOSTEXEC_TAG"))
		out.Flush()
		return code
	case "big":
		// HOSTEXEC_BYTES bytes of a position-dependent pattern, in odd-sized writes.
		n, _ := strconv.Atoi(os.Getenv("HOSTEXEC_BYTES"))
		buf := make([]byte, 7919)
		for pos := 0; pos < n; {
			k := min(len(buf), n-pos)
			for i := range k {
				buf[i] = patternByte(pos + i)
			}
			if _, err := os.Stdout.Write(buf[:k]); err != nil {
				return 2
			}
			pos += k
		}
		fmt.Fprint(os.Stderr, "stderr only\n")
		return 0
	case "stdin":
		b, err := io.ReadAll(os.Stdin)
		fi, serr := os.Stdin.Stat()
		char := serr == nil && fi.Mode()&os.ModeCharDevice != 0
		fmt.Fprintf(out, "bytes=%d err=%v char=%v\n", len(b), err, char)
		return 0
	case "env":
		for _, kv := range os.Environ() {
			fmt.Fprintf(out, "%s\x00", kv)
		}
		return 0
	case "sigint-exit":
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt)
		fmt.Fprintln(out, "ready")
		out.Flush()
		<-c
		fmt.Fprintln(out, "got SIGINT")
		return 0
	case "ignore":
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		fmt.Fprintln(out, "ready")
		out.Flush()
		blockForever()
	case "sleep":
		time.Sleep(60 * time.Second) // a stand-in for a forgotten daemon; killed by the test
		return 0
	case "orphan", "orphan-setsid", "tree", "tree-setsid":
		// Start a grandchild that inherits our stdout and sleeps; print its pid.
		gc := exec.Command(os.Args[0])
		gc.Env = []string{childEnv + "=sleep", "GORACE=atexit_sleep_ms=0"}
		gc.Stdout = os.Stdout
		if mode == "orphan-setsid" || mode == "tree-setsid" {
			gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if mode == "tree" {
			gc.Env = []string{childEnv + "=ignore", "GORACE=atexit_sleep_ms=0"}
		}
		if err := gc.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "start grandchild: %v\n", err)
			return 2
		}
		fmt.Fprintf(out, "pid=%d gc=%d\n", os.Getpid(), gc.Process.Pid)
		if mode == "tree" || mode == "tree-setsid" {
			signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
			fmt.Fprintln(out, "tree-ready")
			out.Flush()
			blockForever()
		}
		fmt.Fprintln(out, "bye")
		return 0
	case "late-tail":
		// Leave a grandchild holding stdout, print a first line and wait until the parent has
		// read it (the pipe is empty again), then write a tail and exit at once: the tail is
		// still in the pipe when the parent's settle grace runs out.
		gc := exec.Command(os.Args[0])
		gc.Env = []string{childEnv + "=sleep", "GORACE=atexit_sleep_ms=0"}
		gc.Stdout = os.Stdout
		gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := gc.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "start grandchild: %v\n", err)
			return 2
		}
		fmt.Fprintf(os.Stdout, "pid=%d gc=%d\n", os.Getpid(), gc.Process.Pid)
		for pipeBuffered(os.Stdout) > 0 {
			time.Sleep(time.Millisecond)
		}
		fmt.Fprintf(os.Stdout, "%sEND\n", strings.Repeat("t", 16<<10))
		return 0
	case "selfterm":
		fmt.Fprintln(out, "terminating")
		out.Flush()
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		blockForever()
	}
	fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
	return 99
}

func patternByte(pos int) byte { return byte(pos % 251) }

// blockForever parks the child until it is killed. A bare select{} would trip the runtime's
// deadlock detector (exit 2) when no other goroutine exists.
func blockForever() {
	for {
		time.Sleep(time.Hour)
	}
}
