// Command relay puts the contract suite's fake provider inside a container's network namespace:
// it listens on a TCP address there (127.0.0.1:18080 in a `--network none` container) and
// forwards every connection to a Unix socket bind-mounted from the host, where the test process
// serves fakeprovider.Provider. A Cline CLI container joined with `--network
// container:<relay's container>` then reaches the provider on 127.0.0.1 while no byte leaves
// loopback, and the tests keep scripting the provider in Go and reading what it received.
//
// It prints "ready <address>" on stdout once it listens and serves until killed. Static
// (CGO_ENABLED=0), so it runs in a FROM scratch image.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18080", "TCP address to listen on")
	to := flag.String("to", "", "Unix socket to forward each connection to")
	flag.Parse()
	if *to == "" {
		fmt.Fprintln(os.Stderr, "relay: -to is required")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
	fmt.Printf("ready %s\n", ln.Addr())
	for n := 1; ; n++ {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay: accept:", err)
			os.Exit(1)
		}
		go forward(n, c.(*net.TCPConn), *to)
	}
}

// forward copies both ways and passes each half-close on, so HTTP keep-alive and streamed
// responses behave as if the client talked to the provider directly. Each connection's life is
// logged to stderr (the tests show it when they fail).
func forward(n int, c *net.TCPConn, to string) {
	defer c.Close()
	start := time.Now()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "relay: %s conn %d from %s: %s\n", time.Now().Format("15:04:05.000"), n, c.RemoteAddr(), fmt.Sprintf(format, a...))
	}
	logf("accepted")
	u, err := net.Dial("unix", to)
	if err != nil {
		logf("dial: %v", err)
		return
	}
	defer func() { logf("closed after %v", time.Since(start).Round(time.Millisecond)) }()
	uc := u.(*net.UnixConn)
	defer uc.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		b, err := io.Copy(uc, c)
		logf("client side ended after %d bytes (%v)", b, err)
		_ = uc.CloseWrite()
	}()
	go func() {
		defer wg.Done()
		b, err := io.Copy(c, uc)
		logf("provider side ended after %d bytes (%v)", b, err)
		_ = c.CloseWrite()
	}()
	wg.Wait()
}
