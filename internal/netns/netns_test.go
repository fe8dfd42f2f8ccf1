//go:build linux

package netns

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRunIsolates: a process started inside Run sees a new namespace with loopback only; a
// listener opened inside answers there and is unreachable from the caller's namespace.
func TestRunIsolates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare(CLONE_NEWNET)")
	}
	// A child's view: /proc/self of this process shows its main thread, which Run may use.
	nsOf := func() string {
		out, _ := exec.Command("readlink", "/proc/self/ns/net").Output()
		return strings.TrimSpace(string(out))
	}
	outside := nsOf()
	var child string
	var addr string
	err := Run(func() error {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer ln.Close()
		addr = ln.Addr().String()
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
			}
		}()
		if c, err := net.Dial("tcp", addr); err != nil {
			return err
		} else {
			c.Close()
		}
		out, err := exec.Command("sh", "-c", "readlink /proc/self/ns/net; cat /proc/net/dev").Output()
		child = string(out)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(child), "\n")
	if lines[0] == outside {
		t.Errorf("the child ran in the test's namespace %s", outside)
	}
	if len(lines) != 4 || !strings.HasPrefix(strings.TrimSpace(lines[3]), "lo:") {
		t.Errorf("interfaces inside: want lo only, got\n%s", child)
	}
	if now := nsOf(); now != outside {
		t.Errorf("processes started after Run live in %s, want the test's %s", now, outside)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s (opened inside) answered from outside", addr)
	}
}
