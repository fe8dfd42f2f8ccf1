package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// TestForwardCarriesToSocket: a connection to the forwarder's TCP port reaches the unix socket,
// both ways, half-closes included.
func TestForwardCarriesToSocket(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the forwarder runs in Linux containers")
	}
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	up, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				b, _ := io.ReadAll(c)
				_, _ = c.Write(append([]byte("echo "), b...))
				c.Close()
			}()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go serveForward(ln, sock)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("CONNECT x:443"))
	_ = c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "echo CONNECT x:443" {
		t.Errorf("got %q, %v", b, err)
	}
}

// TestRunChildStatus: the forwarder exits with its child's code, and 128+n when signal n ended
// the child, as the container's init would report the child itself.
func TestRunChildStatus(t *testing.T) {
	if os.Getenv("FORWARD_TEST_CHILD") != "" {
		return
	}
	t.Setenv("FORWARD_TEST_CHILD", "exit")
	t.Setenv("FORWARD_TEST_CODE", "3")
	if got := runChild([]string{os.Args[0], "-test.run=^TestForwardChild$"}); got != 3 {
		t.Errorf("child exit 3: got %d", got)
	}
	if runtime.GOOS == "windows" {
		return
	}
	t.Setenv("FORWARD_TEST_CHILD", "signal")
	if got := runChild([]string{os.Args[0], "-test.run=^TestForwardChild$"}); got != 128+int(syscall.SIGTERM) {
		t.Errorf("child killed by SIGTERM: got %d, want %d", got, 128+int(syscall.SIGTERM))
	}
	if got := runChild([]string{filepath.Join(t.TempDir(), "missing")}); got != 127 {
		t.Errorf("missing program: got %d, want 127", got)
	}
}

// TestForwardChild is the child of TestRunChildStatus.
func TestForwardChild(t *testing.T) {
	switch os.Getenv("FORWARD_TEST_CHILD") {
	case "exit":
		n, _ := strconv.Atoi(os.Getenv("FORWARD_TEST_CODE"))
		os.Exit(n)
	case "signal":
		p, _ := os.FindProcess(os.Getpid())
		_ = p.Signal(syscall.SIGTERM)
		select {}
	}
}
