package egress

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// maxTargets bounds the distinct endpoints counted per run; the rest count under "(other)".
const maxTargets = 64

// DialTimeout bounds the connection to an allowed endpoint.
const DialTimeout = 30 * time.Second

// Proxy is the egress proxy: an http.Handler that serves CONNECT and absolute-form requests of
// granted runs to their allowed endpoints. It is safe for concurrent use.
type Proxy struct {
	// Dial connects to an allowed address ("ip:port"); nil means a net.Dialer with DialTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Resolve looks a name up; nil means the system's resolver.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Log receives one line per refusal (endpoint and reason, never a payload); nil discards.
	Log *log.Logger
	// RootCAs verify credential upstreams (GrantCredential); nil means the system's roots
	// (cmd/cline-mcp-egress links a fallback set for its empty image).
	RootCAs *x509.CertPool

	mu        sync.Mutex
	grants    map[string]*grant
	transport *http.Transport
	once      sync.Once
}

type grant struct {
	allow   []endpoint
	allowed map[string]*Count
	refused map[string]*Count
	cred    *credential // GrantCredential
	// policyPaths are the requests the endpoint policy refused, by refusal count (count).
	policyPaths map[string][]string
}

// Grant lets the run with token reach the endpoints allow (ParseEndpoint results; others are
// ignored); a second grant of the same token replaces the first's list and keeps its counts.
func (p *Proxy) Grant(token string, allow []string) {
	rules := make([]endpoint, 0, len(allow))
	for _, a := range allow {
		if r, err := parseHostPort(a, 0, true); err == nil {
			rules = append(rules, r)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.grants == nil {
		p.grants = map[string]*grant{}
	}
	g := p.grants[token]
	if g == nil {
		g = &grant{allowed: map[string]*Count{}, refused: map[string]*Count{}}
		p.grants[token] = g
	}
	g.allow = rules
}

// Revoke ends the run's grant and returns what it did; connections it opened are not cut (its
// container is gone by then). An unknown token gives an empty Summary.
func (p *Proxy) Revoke(token string) Summary {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.grants[token]
	delete(p.grants, token)
	if g == nil {
		return Summary{}
	}
	return g.summary()
}

// granted reports whether the run with token has a grant.
func (p *Proxy) granted(token string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.grants[token] != nil
}

// summary is what the grant did so far (caller holds p.mu).
func (g *grant) summary() Summary {
	sum := Summary{Allowed: sortedCounts(g.allowed), Refused: sortedCounts(g.refused)}
	if sp := g.spendOf(); sp != nil {
		sum.Answers, sum.SpentUSD = sp.answered, sp.cost()
	}
	return sum
}

// Settle returns what the run with token did since its grant or its last settle, and starts
// counting anew under the same allow-list: with c, c is the credential its provider requests
// get from now on, with a fresh allowance; without, they get none (a kept container between two
// turns of its session lends its key to nothing).
func (p *Proxy) Settle(token string, c *Credential) (Summary, error) {
	var pc *credential
	if c != nil {
		var err error
		if pc, err = parseCredential(c); err != nil {
			return Summary{}, err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.grants[token]
	if g == nil {
		return Summary{}, fmt.Errorf("settle of a run that was not granted")
	}
	sum := g.summary()
	g.allowed, g.refused, g.policyPaths = map[string]*Count{}, map[string]*Count{}, nil
	g.cred = pc
	return sum, nil
}

func sortedCounts(m map[string]*Count) []Count {
	out := make([]Count, 0, len(m))
	for _, c := range m {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Target != out[j].Target {
			return out[i].Target < out[j].Target
		}
		return out[i].Reason < out[j].Reason
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// errUnknownRun is the refusal of a request without a live grant.
const errUnknownRun = "the run token is unknown or its run has ended"

// rule returns the most specific rule of token's grant that allows t, or the reason there is
// none. The order of the list does not matter: an IP or exact name beats a wildcard, a longer
// wildcard domain a shorter one (so "tgt.lab.example:8443" keeps its private addresses whether
// "*.lab.example:8443" comes before or after it).
func (p *Proxy) rule(token string, t endpoint) (endpoint, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.grants[token]
	if g == nil {
		return endpoint{}, errUnknownRun
	}
	var best endpoint
	found := false
	for _, r := range g.allow {
		if r.matches(t) && (!found || r.specificity() > best.specificity()) {
			best, found = r, true
		}
	}
	if found {
		return best, ""
	}
	return endpoint{}, "not on this run's egress allow-list (add it with --egress-allow " + t.String() + ")"
}

// specificity orders the rules that match one target: exact (an IP or a name) above every
// wildcard, a wildcard by the length of its domain.
func (r endpoint) specificity() int {
	if !r.wildcard {
		return 1 << 16
	}
	return len(r.name)
}

// count records one request of token for target: allowed by rule when reason is empty, else
// refused for reason (budget: a refusal for the run's allowance). Refusals count per target and
// kind: the endpoint policy's refusals of one target share a count whose reason names the first
// maxPolicyPaths requests it refused. Requests of unknown runs are not counted (there is no run
// to tell).
func (p *Proxy) count(token, target, rule, reason string, budget bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.grants[token]
	if g == nil {
		return
	}
	m := g.allowed
	if reason != "" {
		m, rule = g.refused, ""
	}
	key, shown := target, target
	what, policy := strings.CutSuffix(reason, ": "+PolicyDenied)
	switch {
	case budget:
		key = target + "\x00budget"
	case policy:
		key = target + "\x00policy"
	case reason != "":
		key = target + "\x00" + reason
	}
	if _, ok := m[key]; !ok && len(m) >= maxTargets {
		key, shown, rule = "(other)", "(other)", ""
		if budget {
			key = "(other budget)"
		}
	}
	c := m[key]
	if c == nil {
		c = &Count{Target: shown, Reason: reason, Rule: rule, Budget: budget}
		m[key] = c
	}
	c.Count++
	if policy && key != "(other)" {
		c.Reason = g.policyReason(key, what)
	}
}

// maxPolicyPaths bounds the requests a policy refusal's reason names.
const maxPolicyPaths = 4

// policyReason adds what ("METHOD /path") to the requests the policy refused under key and
// returns the count's reason (caller holds p.mu).
func (g *grant) policyReason(key, what string) string {
	if g.policyPaths == nil {
		g.policyPaths = map[string][]string{}
	}
	list := g.policyPaths[key]
	if !slices.Contains(list, what) && len(list) <= maxPolicyPaths {
		list = append(list, what)
		g.policyPaths[key] = list
	}
	shown := list
	more := ""
	if len(list) > maxPolicyPaths {
		shown, more = list[:maxPolicyPaths], " and others"
	}
	return strings.Join(shown, ", ") + more + ": " + PolicyDenied
}

// ServeHTTP serves one proxy request: CONNECT host:port opens a tunnel, an absolute-form request
// (GET http://host:port/...) is forwarded with its response streamed back as it arrives. The run
// is the user name of the Proxy-Authorization header; it never reaches the endpoint. The target
// is parsed strictly (parseHostPort), matched against the run's rules, resolved by the proxy,
// and only addresses the matching rule may reach (addressPolicy) are dialled.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := proxyUser(r.Header.Get("Proxy-Authorization"))
	var raw, scheme string
	switch {
	case r.Method == http.MethodConnect:
		raw, scheme = r.Host, "https"
	case r.URL.IsAbs() && r.URL.Scheme == "http" && r.URL.User == nil && r.URL.Opaque == "":
		raw, scheme = r.URL.Host, "http"
	default:
		http.Error(w, "cline-mcp egress proxy: send CONNECT host:port or an absolute http:// request without user info", http.StatusBadRequest)
		return
	}
	if token == "" {
		// Clients like curl send credentials only when challenged (Bun sends them at once).
		w.Header().Set("Proxy-Authenticate", `Basic realm="cline-mcp egress"`)
		http.Error(w, "cline-mcp egress proxy: the run token is missing (Proxy-Authorization)", http.StatusProxyAuthRequired)
		return
	}
	var cred *credential
	if scheme == "http" && r.URL.Host == ProviderHost {
		// A provider request from the run's forwarder: checked and counted as a request to
		// the upstream of the run's credential.
		if cred = p.credentialOf(token); cred == nil {
			const why = "no provider credential is lent to this run now (between two turns of its session, or never)"
			if p.granted(token) {
				p.count(token, ProviderHost+":80", "", why, false) // a kept container between turns
			}
			w.Header().Set("X-Cline-Mcp-Egress", "refused")
			http.Error(w, "cline-mcp egress proxy: "+why, http.StatusForbidden)
			return
		}
		raw, scheme = cred.target.String(), cred.scheme
	}
	t, err := parseTarget(raw, scheme)
	target := t.String()
	var rule endpoint
	var reason string
	var addrs []netip.Addr
	budget := false
	if err != nil {
		target, reason = printable(raw), "not a plain host:port ("+err.Error()+")"
	} else if rule, reason = p.rule(token, t); reason == "" && cred != nil {
		// The credential is lent only to the API the run needs, within its allowance.
		if reason = cred.permits(r); reason == "" {
			reason = p.overBudget(token)
			budget = reason != ""
		}
	}
	if reason == "" {
		addrs, reason = p.addresses(r.Context(), rule, t)
	}
	if reason != errUnknownRun {
		p.count(token, target, rule.String(), reason, budget)
	}
	if reason != "" {
		p.logf("refused %s: %s", target, reason)
		w.Header().Set("X-Cline-Mcp-Egress", "refused")
		http.Error(w, fmt.Sprintf("cline-mcp egress proxy refused %s: %s", target, reason), http.StatusForbidden)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, target, t.port, addrs)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), addrsKey{}, addrs))
	if cred != nil {
		p.forwardCredential(w, r, cred, token)
		return
	}
	p.forward(w, r, target)
}

// printable is s with anything outside printable ASCII replaced, at most 128 bytes: what a
// refusal of an unparsable target reports.
func printable(s string) string {
	b := []byte(s)
	if len(b) > 128 {
		b = append(b[:125], "..."...)
	}
	for i, c := range b {
		if c < ' ' || c >= 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

type addrsKey struct{}

// dialAddrs connects to the first of addrs (checked addresses of one target) that answers.
func (p *Proxy) dialAddrs(ctx context.Context, addrs []netip.Addr, port uint16) (net.Conn, error) {
	var errs []error
	for _, a := range addrs {
		addr := netip.AddrPortFrom(a, port).String()
		var c net.Conn
		var err error
		if p.Dial != nil {
			c, err = p.Dial(ctx, "tcp", addr)
		} else {
			d := net.Dialer{Timeout: DialTimeout}
			c, err = d.DialContext(ctx, "tcp", addr)
		}
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// tunnel connects to target, answers 200 and copies both ways until both sides are done.
func (p *Proxy) tunnel(w http.ResponseWriter, target string, port uint16, addrs []netip.Addr) {
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	up, err := p.dialAddrs(ctx, addrs, port)
	cancel()
	if err != nil {
		p.logf("connect %s: %v", target, err)
		http.Error(w, fmt.Sprintf("cline-mcp egress proxy: cannot reach %s: %v", target, err), http.StatusBadGateway)
		return
	}
	defer up.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cline-mcp egress proxy: cannot tunnel over this connection", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer down.Close()
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		// Bytes the client sent after the CONNECT head are already in buf.
		_, _ = io.Copy(up, buf)
		closeWrite(up)
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(down, up)
		closeWrite(down)
	}()
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// forward sends an absolute-form request to target and streams the answer back (SSE included:
// every chunk is flushed as it arrives). Hop-by-hop headers, Proxy-Authorization among them,
// are dropped on the way.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, target string) {
	p.once.Do(p.initTransports)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *pr.In.URL
			u.Host = target
			pr.Out.URL = &u
			pr.Out.Host = pr.In.Host
		},
		Transport:     p.transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			p.logf("forward %s: %v", target, err)
			http.Error(w, fmt.Sprintf("cline-mcp egress proxy: cannot reach %s: %v", target, err), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

// dialChecked is the forwarding transport's dialer: it connects only to the addresses
// ServeHTTP checked for the request (in the context), on addr's port.
func (p *Proxy) dialChecked(ctx context.Context, _, addr string) (net.Conn, error) {
	addrs, _ := ctx.Value(addrsKey{}).([]netip.Addr)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	n, err := parsePort(port)
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("egress: no checked address for %s", addr)
	}
	return p.dialAddrs(ctx, addrs, n)
}

func (p *Proxy) logf(format string, a ...any) {
	if p.Log != nil {
		p.Log.Printf(format, a...)
	}
}

// proxyUser is the user name of a Basic Proxy-Authorization header, or "".
func proxyUser(h string) string {
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return ""
	}
	user, _, _ := strings.Cut(string(b), ":")
	return user
}
