// Command cline-mcp-egress is the egress proxy of cline-mcp's Docker runs (sandbox/egress), the
// only process of the FROM scratch image images/egress. cline-mcp starts one per server instance
// in a container on the server's internal network and attaches to its stdin and stdout: it
// prints {"op":"ready","addr":...} once it listens, then answers grant and revoke messages, one
// JSON line each. It exits when its stdin ends (the server went away). Refusals are logged to
// stderr (endpoint and reason only).
//
// -listen interfaces:3128 listens on port 3128 of every non-loopback address the container has
// when the proxy starts: the server connects the network that leads out only afterwards, so the
// proxy is never reachable from it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

func main() {
	listen := flag.String("listen", "interfaces:"+strconv.Itoa(egress.Port), "host:port, or interfaces:<port> for every non-loopback address present at start")
	flag.Parse()
	logger := log.New(os.Stderr, "cline-mcp-egress: ", log.LstdFlags|log.Lmsgprefix)
	lns, err := listeners(*listen)
	if err != nil {
		logger.Print(err)
		os.Exit(1)
	}
	p := &egress.Proxy{Log: logger}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: logger}
	for _, ln := range lns {
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Print(err)
				os.Exit(1)
			}
		}()
	}
	if err := p.Control(os.Stdin, os.Stdout, lns[0].Addr().String()); err != nil {
		logger.Print(err)
	}
	// stdin ended: the server is gone (or stopping us); so are its runs.
	_ = srv.Close()
}

func listeners(spec string) ([]net.Listener, error) {
	port, ok := strings.CutPrefix(spec, "interfaces:")
	if !ok {
		ln, err := net.Listen("tcp", spec)
		if err != nil {
			return nil, err
		}
		return []net.Listener{ln}, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var lns []net.Listener
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ipn.IP.String(), port))
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return nil, fmt.Errorf("no non-loopback address to listen on (%d addresses)", len(addrs))
	}
	return lns, nil
}
