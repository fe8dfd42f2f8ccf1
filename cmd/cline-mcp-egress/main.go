// Command cline-mcp-egress is the egress proxy of cline-mcp's Docker runs (sandbox/egress), the
// only process of the FROM scratch image images/egress. cline-mcp starts one per server instance
// in a container on the network that leads out and attaches to its stdin and stdout: it
// prints {"op":"ready","addr":...} once it listens, then answers grant and revoke messages, one
// JSON line each. It exits when its stdin ends (the server went away). Refusals are logged to
// stderr (endpoint and reason only).
//
// By default it listens on the unix socket egress.SocketPath, in the volume its image declares
// (egress.VolumeDir), which also holds a copy of this binary: run containers have no network at
// all, get that volume read-only (VolumesFrom) and start through `cline-mcp-egress forward`
// (forward.go), which carries their loopback port egress.ForwardAddr to the socket. Nothing on
// a network reaches the proxy. -listen interfaces:3128 (every non-loopback address present at
// start) and -listen host:port remain for tests and other set-ups. `cline-mcp-egress sidecar`
// (sidecar.go) is the same proxy as a Kubernetes run pod's sidecar, holding that run's provider
// credential; the executor execs `cline-mcp-egress sidecar-settle [-dir d]` (sidecar_settle.go)
// into it between two turns of a kept pod (the next turn's credential, or none, on its stdin;
// what the proxy counted on stdout) and `cline-mcp-egress sidecar-summary [-dir d]` when the run
// ended (the grant ends; what the proxy counted on stdout).
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	// The image has no CA store: credential upstreams (egress.Credential) are verified against
	// this copy of Mozilla's roots when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "forward" {
		os.Exit(forwardMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "sidecar" {
		os.Exit(sidecarMain(os.Args[2:], os.Stdin, os.Stdout))
	}
	if len(os.Args) > 1 && os.Args[1] == "sidecar-summary" {
		os.Exit(sidecarSummaryMain(os.Args[2:], os.Stdout))
	}
	if len(os.Args) > 1 && os.Args[1] == "sidecar-settle" {
		os.Exit(sidecarSettleMain(os.Args[2:], os.Stdin, os.Stdout))
	}
	listen := flag.String("listen", "unix:"+egress.SocketPath, "unix:<path> (a socket, mode 0666), host:port, or interfaces:<port> for every non-loopback address present at start")
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
	if path, ok := strings.CutPrefix(spec, "unix:"); ok {
		_ = os.Remove(path)
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, err
		}
		// Run containers connect as their own user.
		if err := os.Chmod(path, 0o666); err != nil {
			ln.Close()
			return nil, err
		}
		return []net.Listener{ln}, nil
	}
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
