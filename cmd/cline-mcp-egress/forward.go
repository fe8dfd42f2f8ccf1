package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// forwardMain is `cline-mcp-egress forward [-socket path] [-listen addr] -- program args...`,
// the first process of a run container (under the engine's init). The run container has no
// network at all; this listens on its own loopback (127.0.0.1:3128, where HTTPS_PROXY points)
// and forwards every connection to the proxy's unix socket, which reaches the container
// through the proxy container's volume (mounted read-only). It starts program as its child
// with its own stdin, stdout, stderr and environment, passes SIGINT, SIGTERM, SIGHUP and
// SIGQUIT on to it, and exits with its status (128+n when signal n ended it), so a stop or a
// kill of the container reaches the CLI as before.
func forwardMain(args []string) int {
	fs := flag.NewFlagSet("forward", flag.ContinueOnError)
	socket := fs.String("socket", egress.SocketPath, "the proxy's unix socket")
	listen := fs.String("listen", egress.ForwardAddr, "where the run's HTTPS_PROXY points")
	provider := fs.String("provider", "", "also serve the run's provider requests here (the credential stays with the proxy): "+egress.ProviderAddr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	prog := fs.Args()
	if len(prog) == 0 {
		fmt.Fprintln(os.Stderr, "cline-mcp-egress forward: want -- program args...")
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cline-mcp-egress forward:", err)
		return 1
	}
	go serveForward(ln, *socket)
	if *provider != "" {
		u, err := runProxyURL()
		if err != nil {
			fmt.Fprintln(os.Stderr, "cline-mcp-egress forward:", err)
			return 1
		}
		pln, err := net.Listen("tcp", *provider)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cline-mcp-egress forward:", err)
			return 1
		}
		go func() {
			if err := serveProvider(pln, *socket, u); err != nil {
				fmt.Fprintln(os.Stderr, "cline-mcp-egress forward:", err)
			}
		}()
	}
	return runChild(prog)
}

// serveForward copies every accepted connection to and from a new connection to socket.
func serveForward(ln net.Listener, socket string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go func() {
			defer c.Close()
			up, err := net.DialTimeout("unix", socket, 10*time.Second)
			if err != nil {
				fmt.Fprintln(os.Stderr, "cline-mcp-egress forward:", err)
				return
			}
			defer up.Close()
			pipe(c, up)
		}()
	}
}

// pipe copies both ways until both directions ended, passing each half-close on.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
}

// runChild runs prog, forwards the stop signals to it and returns its exit status.
func runChild(prog []string) int {
	cmd := exec.Command(prog[0], prog[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "cline-mcp-egress forward:", err)
		if errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	return exitStatus(cmd.ProcessState, err)
}
