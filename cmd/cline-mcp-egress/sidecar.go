package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// SidecarGrant is the one line the Kubernetes executor writes to the sidecar's stdin
// (pods/attach): the run's provider credential and, when the run's NetworkPolicy admits only
// some addresses, the upstream host's addresses to dial (the ones the policy names). It never
// appears in the pod's spec, environment or log.
type SidecarGrant struct {
	Credential egress.Credential `json:"credential"`
	Addrs      []string          `json:"addrs,omitempty"`
}

// sidecarMain is `cline-mcp-egress sidecar [-dir d] [-provider addr]`, a Kubernetes run pod's
// native sidecar (sandbox/kubernetes). It runs as a user of its own, in a container the run's
// CLI cannot see into (no shared process namespace), and shares only the pod's network: it reads
// one SidecarGrant from stdin, answers {"op":"granted"} (or {"op":"error"}) on stdout, and then
// serves the run's provider requests on the pod's loopback (egress.ProviderAddr, the baseUrl of
// the run's settings copy) through an egress.Proxy that adds the credential and reaches only the
// credential's upstream. The proxy itself listens on a unix socket in dir, a volume only this
// container mounts. Each further line of stdin is a settle (SidecarSettle, below), answered on
// stdout, from an executor that kept the grant's attach open; the pod's deletion ends the sidecar.
//
// Otherwise the executor reaches the sidecar afterwards only by exec'ing into this container,
// through two more sockets in dir. Between two turns of a kept pod, `cline-mcp-egress sidecar-settle`
// (sidecar_settle.go) settles the grant: it returns what the proxy counted since the grant or the
// last settle, and from then on the proxy lends the credential that came on the exec's stdin
// (the next turn's, with a fresh allowance) or none. Once the run's CLI ended,
// `cline-mcp-egress sidecar-summary` ends the grant and prints what the proxy counted since
// (egress.Summary) on stdout.
func sidecarMain(args []string, stdin io.Reader, stdout io.Writer) int {
	fs := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	dir := fs.String("dir", "/run/cline-mcp-egress", "a directory only this container sees, for the proxy's socket")
	listen := fs.String("provider", egress.ProviderAddr, "where the run's provider requests arrive (the pod's loopback)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logger := log.New(os.Stderr, "cline-mcp-egress sidecar: ", log.LstdFlags|log.Lmsgprefix)
	enc := json.NewEncoder(stdout)
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		logger.Printf("no grant on stdin: %v", err)
		return 1
	}
	pln, err := sidecarServe(line, *dir, *listen, logger)
	if err != nil {
		// The run cannot reach its provider: say so to the executor, and stay (a sidecar that
		// exits is restarted, and would wait for a grant that never comes).
		_ = enc.Encode(egress.Message{Op: "error", Error: err.Error()})
		logger.Print(err)
		select {}
	}
	defer pln.Close()
	_ = enc.Encode(egress.Message{Op: "granted"})
	// An executor that keeps the grant's attach settles over it: each further line is a
	// SidecarSettle, answered on stdout as sidecar-settle answers (the same socket).
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if sidecarSettleMain([]string{"-dir", *dir}, bytes.NewReader(line), stdout) != 0 {
				_ = enc.Encode(SidecarSettled{Error: "settle: the sidecar's settle socket could not be reached"})
			}
		}
		if err != nil {
			break
		}
	}
	select {}
}

// sidecarServe grants the credential of line to a run token of its own and starts the proxy
// (on a unix socket in dir), the sockets of sidecar-summary and sidecar-settle (in dir too), and
// the provider listener (on listen) that hands the proxy the run's requests with that token.
func sidecarServe(line []byte, dir, listen string, logger *log.Logger) (net.Listener, error) {
	var g SidecarGrant
	if err := json.Unmarshal(line, &g); err != nil {
		return nil, fmt.Errorf("grant: %v", err)
	}
	host, target, err := upstreamTarget(g.Credential.Upstream)
	if err != nil {
		return nil, fmt.Errorf("grant: %w", err)
	}
	var pinned []netip.Addr
	for _, a := range g.Addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("grant: address %q: %v", a, err)
		}
		pinned = append(pinned, ip)
	}
	p := &egress.Proxy{Log: logger}
	if len(pinned) > 0 {
		p.Resolve = func(_ context.Context, name string) ([]netip.Addr, error) {
			if name != host {
				return nil, fmt.Errorf("%s is not the run's provider", name)
			}
			return pinned, nil
		}
	}
	token, err := sidecarToken()
	if err != nil {
		return nil, err
	}
	p.Grant(token, []string{target})
	if err := p.GrantCredential(token, &g.Credential); err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, "proxy.sock")
	ln, err := listenUnix(socket)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: logger}
	go func() { _ = srv.Serve(ln) }()
	sln, err := listenUnix(filepath.Join(dir, "summary.sock"))
	if err != nil {
		return nil, err
	}
	go serveSummary(sln, p, token)
	tln, err := listenUnix(filepath.Join(dir, "settle.sock"))
	if err != nil {
		return nil, err
	}
	go serveSettle(tln, p, token, target)
	pln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := serveProvider(pln, socket, &url.URL{Scheme: "http", User: url.User(token), Host: "egress"}); err != nil {
			logger.Print(err)
		}
	}()
	return pln, nil
}

// upstreamTarget is the host of a credential's upstream and its host:port, the one endpoint the
// sidecar's grant allows (and the pod's NetworkPolicy admits).
func upstreamTarget(upstream string) (host, target string, err error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Hostname() == "" {
		return "", "", errors.New("the credential names no upstream")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return u.Hostname(), net.JoinHostPort(u.Hostname(), port), nil
}

// listenUnix listens on the unix socket path, replacing a stale one.
func listenUnix(path string) (net.Listener, error) {
	_ = os.Remove(path)
	return net.Listen("unix", path)
}

func sidecarToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// serveSummary answers each connection with the run's summary (ending its grant: the run's CLI
// has ended when the executor asks).
func serveSummary(ln net.Listener, p *egress.Proxy, token string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = json.NewEncoder(c).Encode(p.Revoke(token))
		_ = c.Close()
	}
}

// sidecarSummaryMain is `cline-mcp-egress sidecar-summary [-dir d]`, exec'd into the sidecar's
// container: it copies the sidecar's summary to stdout.
func sidecarSummaryMain(args []string, stdout io.Writer) int {
	fs := flag.NewFlagSet("sidecar-summary", flag.ContinueOnError)
	dir := fs.String("dir", "/run/cline-mcp-egress", "the sidecar's directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c, err := net.DialTimeout("unix", filepath.Join(*dir, "summary.sock"), 10*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cline-mcp-egress sidecar-summary:", err)
		return 1
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "cline-mcp-egress sidecar-summary:", err)
		return 1
	}
	return 0
}
