package testcluster

import (
	"bufio"
	"io"
	"net"
	"os"
	"testing"
)

// TestForwarder: bytes go both ways through the forwarded port, and close ends the listener and
// the open connections. The "namespace" is the test's own (entering it needs root).
func TestForwarder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setns needs root")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }() // echo
		}
	}()
	f, err := forward("/proc/self/ns/net", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", f.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := bufio.NewReader(c).ReadString('\n'); got != "ping\n" {
		t.Fatalf("got %q (%v), want the echo", got, err)
	}
	f.close()
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read after close: got %v, want EOF", err)
	}
	if c2, err := net.Dial("tcp", f.addr()); err == nil {
		c2.Close()
		t.Error("the forwarded port still accepts after close")
	}
}
