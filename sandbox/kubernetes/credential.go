package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// grantTimeout bounds handing the credential to the sidecar (its start included).
const grantTimeout = time.Minute

// sidecarGrant is cline-mcp-egress sidecar's grant line (its SidecarGrant).
type sidecarGrant struct {
	Credential egress.Credential `json:"credential"`
	Addrs      []string          `json:"addrs,omitempty"`
}

// egressCredential is c in the egress proxy's words: the upstream, the headers, the endpoints it
// is lent to and the run's allowance.
func egressCredential(c *sandbox.Credential) egress.Credential {
	a := c.Allowance
	return egress.Credential{Upstream: c.Upstream, Headers: c.Headers, BasePath: c.BasePath, Endpoints: c.Endpoints,
		Allowance: egress.Allowance{Requests: a.Requests, CostUSD: a.CostUSD, InputUSDPerMTok: a.InputUSDPerMTok,
			OutputUSDPerMTok: a.OutputUSDPerMTok, Limits: a.Limits}}
}

// upstream is where a run's sidecar sends its provider requests: the credential's upstream
// resolved by the server (the addresses the run's NetworkPolicy admits on port, and the only ones
// the sidecar dials). An address in the URL is used as it is.
type upstream struct {
	addrs []netip.Addr
	port  int
}

func resolveUpstream(ctx context.Context, c *sandbox.Credential) (upstream, error) {
	u, err := url.Parse(c.Upstream)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return upstream{}, fmt.Errorf("kubernetes executor: the credential's upstream %q is not http(s)://host[:port]", c.Upstream)
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return upstream{}, fmt.Errorf("kubernetes executor: the credential's upstream %q has a bad port", c.Upstream)
		}
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		return upstream{addrs: []netip.Addr{ip.Unmap()}, port: port}, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", u.Hostname())
	if err != nil || len(addrs) == 0 {
		return upstream{}, fmt.Errorf("kubernetes executor: resolve the provider %s for the run's NetworkPolicy: %v", u.Hostname(), err)
	}
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	return upstream{addrs: addrs, port: port}, nil
}

// allow is the upstream as --k8s-egress-allow entries (an address per entry, "addr:port"
// without brackets, as egressRule reads an IPv6 address too).
func (u upstream) allow() []string {
	out := make([]string, 0, len(u.addrs))
	for _, a := range u.addrs {
		out = append(out, a.String()+":"+strconv.Itoa(u.port))
	}
	return out
}

// grant hands the credential to the pod's sidecar over its stdin (pods/attach) once it runs, and
// waits for its answer: the credential never enters the pod's spec, environment or log. pinned
// are the addresses the sidecar may dial (nil: it resolves the name itself, egress open). With
// keep the attach stays open for the run's settles (sidecarLine; the caller closes it), else it
// ends with the answer.
func (e *Executor) grant(ctx context.Context, pod string, c *sandbox.Credential, pinned []netip.Addr, keep bool) (*sidecarLine, error) {
	wctx, cancel := context.WithTimeout(ctx, grantTimeout)
	defer cancel()
	if _, err := e.waitFor(wctx, pod, func(p *corev1.Pod) bool { return initRunning(p, sidecarName) }); err != nil {
		return nil, err
	}
	g := sidecarGrant{Credential: egressCredential(c)}
	for _, a := range pinned {
		g.Addrs = append(g.Addrs, a.String())
	}
	line, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	l := e.attachSidecar(ctx, pod)
	text, rerr := l.ask(line, grantTimeout)
	if !keep || rerr != nil {
		l.close()
	}
	if rerr != nil {
		return nil, e.apiError("create pods/attach", fmt.Errorf("egress sidecar: no answer: %w", rerr))
	}
	var answer struct {
		Op    string `json:"op"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(text, &answer); err != nil || answer.Op != "granted" {
		l.close()
		return nil, &sandbox.LaunchError{Op: "pod start", Err: fmt.Errorf("egress sidecar: %s %s", answer.Op, answer.Error),
			Hint: "the run image must hold cline-mcp-egress (make image adds it)"}
	}
	if !keep {
		return nil, nil
	}
	return l, nil
}

// sidecarSummary ends the run's grant in its sidecar (an exec of cline-mcp-egress
// sidecar-summary) and returns what the sidecar's proxy refused and how many answers it let
// through with the credential (nil when there is nothing to say, or the pod is gone).
func (e *Executor) sidecarSummary(ctx context.Context, pod string) *sandbox.EgressReport {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	var out bytes.Buffer
	opts := &corev1.PodExecOptions{Container: sidecarName, Command: []string{e.cfg.Egress, "sidecar-summary", "-dir", sidecarDir}, Stdout: true}
	if err := e.stream(sctx, pod, "exec", opts, remotecommand.StreamOptions{Stdout: &out}); err != nil {
		return nil
	}
	var sum egress.Summary
	if json.Unmarshal(out.Bytes(), &sum) != nil {
		return nil
	}
	return egressReport(sum)
}
