package egress

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
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
	// Dial connects to an allowed endpoint; nil means a net.Dialer with DialTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log receives one line per refusal (endpoint and reason, never a payload); nil discards.
	Log *log.Logger

	mu        sync.Mutex
	grants    map[string]*grant
	transport *http.Transport
	once      sync.Once
}

type grant struct {
	allow   []string
	allowed map[string]*Count
	refused map[string]*Count
}

// Grant lets the run with token reach the endpoints allow (ParseEndpoint results); a second grant
// of the same token replaces the first's list and keeps its counts.
func (p *Proxy) Grant(token string, allow []string) {
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
	g.allow = append([]string(nil), allow...)
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
	return Summary{Allowed: sortedCounts(g.allowed), Refused: sortedCounts(g.refused)}
}

func sortedCounts(m map[string]*Count) []Count {
	out := make([]Count, 0, len(m))
	for _, c := range m {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	if len(out) == 0 {
		return nil
	}
	return out
}

// decide checks one request of token for target, counts it, and returns "" when it may pass or
// the reason it may not.
func (p *Proxy) decide(token, target string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.grants[token]
	if g == nil {
		return "the run token is unknown or its run has ended"
	}
	reason := "not on this run's egress allow-list (add it with --egress-allow " + target + ")"
	for _, a := range g.allow {
		if Match(a, target) {
			reason = ""
			break
		}
	}
	m := g.allowed
	if reason != "" {
		m = g.refused
	}
	key := target
	if _, ok := m[key]; !ok && len(m) >= maxTargets {
		key = "(other)"
	}
	c := m[key]
	if c == nil {
		c = &Count{Target: key, Reason: reason}
		m[key] = c
	}
	c.Count++
	return reason
}

// ServeHTTP serves one proxy request: CONNECT host:port opens a tunnel, an absolute-form request
// (GET http://host:port/...) is forwarded with its response streamed back as it arrives. The run
// is the user name of the Proxy-Authorization header; it never reaches the endpoint.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := proxyUser(r.Header.Get("Proxy-Authorization"))
	var target string
	var err error
	switch {
	case r.Method == http.MethodConnect:
		target, err = normalTarget(r.Host, "https")
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		target, err = normalTarget(r.URL.Host, "http")
	default:
		http.Error(w, "cline-mcp egress proxy: send CONNECT host:port or an absolute http:// request", http.StatusBadRequest)
		return
	}
	if err != nil {
		http.Error(w, "cline-mcp egress proxy: bad target: "+err.Error(), http.StatusBadRequest)
		return
	}
	if token == "" {
		// Clients like curl send credentials only when challenged (Bun sends them at once).
		w.Header().Set("Proxy-Authenticate", `Basic realm="cline-mcp egress"`)
		http.Error(w, "cline-mcp egress proxy: the run token is missing (Proxy-Authorization)", http.StatusProxyAuthRequired)
		return
	}
	if reason := p.decide(token, target); reason != "" {
		p.logf("refused %s: %s", target, reason)
		w.Header().Set("X-Cline-Mcp-Egress", "refused")
		http.Error(w, fmt.Sprintf("cline-mcp egress proxy refused %s: %s", target, reason), http.StatusForbidden)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, target)
		return
	}
	p.forward(w, r, target)
}

func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if p.Dial != nil {
		return p.Dial(ctx, network, addr)
	}
	d := net.Dialer{Timeout: DialTimeout}
	return d.DialContext(ctx, network, addr)
}

// tunnel connects to target, answers 200 and copies both ways until both sides are done.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, target string) {
	ctx, cancel := context.WithTimeout(r.Context(), DialTimeout)
	up, err := p.dial(ctx, "tcp", target)
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
	p.once.Do(func() {
		p.transport = &http.Transport{
			Proxy:                 nil,
			DialContext:           p.dial,
			ForceAttemptHTTP2:     false,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 0,
			DisableCompression:    true,
		}
	})
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
