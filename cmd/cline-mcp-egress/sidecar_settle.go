package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// maxSettleLine bounds the one line of a settle: a credential is a few kilobytes at most.
const maxSettleLine = 1 << 20

// SidecarSettle is the one line the Kubernetes executor writes to the stdin of
// `cline-mcp-egress sidecar-settle`, which passes it to the sidecar: the credential the run's
// provider requests get from now on (the next turn's, with its allowance), or null for none. It
// travels only on stdin and the sidecar's own socket, never in an argument, the environment or a
// log line.
type SidecarSettle struct {
	Credential *egress.Credential `json:"credential"`
}

// SidecarSettled is the sidecar's answer to a SidecarSettle, one line: what its proxy counted
// since the grant or the last settle, or why nothing was settled.
type SidecarSettled struct {
	Summary *egress.Summary `json:"summary,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// serveSettle answers each connection's SidecarSettle with a SidecarSettled, one at a time (the
// executor settles between turns, never two at once). target is the granted upstream's
// host:port.
func serveSettle(ln net.Listener, p *egress.Proxy, token, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(io.LimitReader(c, maxSettleLine)).ReadBytes('\n')
		var ans SidecarSettled
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			ans.Error = "settle: no settle line"
		} else {
			ans = settle(line, p, token, target)
		}
		_ = json.NewEncoder(c).Encode(ans)
		_ = c.Close()
	}
}

// settle settles the grant of token with the credential of line. A credential for another
// upstream than target is refused, and nothing is settled: the grant's allow-list, the pinned
// addresses and the pod's NetworkPolicy all name target alone, so the proxy could lend it to no
// request. The caller then gets a pod granted the new upstream instead of a turn whose every
// provider request is refused.
func settle(line []byte, p *egress.Proxy, token, target string) SidecarSettled {
	var req SidecarSettle
	if err := json.Unmarshal(line, &req); err != nil {
		// json's errors quote at most one character of the line, but the line holds a key.
		return SidecarSettled{Error: "settle: the line is not a settle request"}
	}
	if c := req.Credential; c != nil {
		_, t, err := upstreamTarget(c.Upstream)
		if err != nil {
			return SidecarSettled{Error: "settle: " + err.Error()}
		}
		if !strings.EqualFold(t, target) {
			return SidecarSettled{Error: fmt.Sprintf("settle: the credential's upstream %s is not the granted %s", t, target)}
		}
	}
	sum, err := p.Settle(token, req.Credential)
	if err != nil {
		return SidecarSettled{Error: "settle: " + err.Error()}
	}
	return SidecarSettled{Summary: &sum}
}

// sidecarSettleMain is `cline-mcp-egress sidecar-settle [-dir d]`, exec'd into the sidecar's
// container: it copies one line of its stdin (a SidecarSettle) to the sidecar and the sidecar's
// answer (a SidecarSettled) to stdout. An answer with an error is still exit 0: the executor
// reads it; exit 1 means the sidecar could not be reached.
func sidecarSettleMain(args []string, stdin io.Reader, stdout io.Writer) int {
	fs := flag.NewFlagSet("sidecar-settle", flag.ContinueOnError)
	dir := fs.String("dir", "/run/cline-mcp-egress", "the sidecar's directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "cline-mcp-egress sidecar-settle:", err)
		return 1
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, maxSettleLine)).ReadBytes('\n')
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return fail(fmt.Errorf("no settle line on stdin: %w", err))
	}
	if !strings.HasSuffix(string(line), "\n") {
		line = append(line, '\n')
	}
	c, err := net.DialTimeout("unix", filepath.Join(*dir, "settle.sock"), 10*time.Second)
	if err != nil {
		return fail(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(line); err != nil {
		return fail(err)
	}
	if _, err := io.Copy(stdout, c); err != nil {
		return fail(err)
	}
	return 0
}
