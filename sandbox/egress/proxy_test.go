package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"api.openai.com:443", "api.openai.com:443"},
		{"API.OpenAI.com.:443", "api.openai.com:443"},
		{"*.amazonaws.com:443", "*.amazonaws.com:443"},
		{"10.1.2.3:8080", "10.1.2.3:8080"},
		{"[::1]:80", "[::1]:80"},
		{"provider_1:18080", "provider_1:18080"},
		{"api.openai.com", ""},
		{"api.openai.com:0", ""},
		{"api.openai.com:65536", ""},
		{":443", ""},
		{"-bad.com:443", ""},
		{"a b:443", ""},
		{"*.:443", ""},
	} {
		got, err := ParseEndpoint(tc.in)
		if tc.want == "" {
			if err == nil || !errors.Is(err, ErrEndpoint) {
				t.Errorf("ParseEndpoint(%q): got %q, %v, want an ErrEndpoint", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseEndpoint(%q): got %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, target string
		want            bool
	}{
		{"api.openai.com:443", "api.openai.com:443", true},
		{"api.openai.com:443", "api.openai.com:80", false},
		{"api.openai.com:443", "evil.api.openai.com:443", false},
		{"*.amazonaws.com:443", "bedrock-runtime.us-east-1.amazonaws.com:443", true},
		{"*.amazonaws.com:443", "amazonaws.com:443", false},
		{"*.amazonaws.com:443", "amazonaws.com.evil.net:443", false},
		{"*.amazonaws.com:443", "evilamazonaws.com:443", false},
	} {
		if got := Match(tc.pattern, tc.target); got != tc.want {
			t.Errorf("Match(%q, %q): got %v, want %v", tc.pattern, tc.target, got, tc.want)
		}
	}
}

// proxied starts the proxy on loopback and returns an HTTP client that goes through it as the
// run with token (no token: no credentials).
func proxied(t *testing.T, p *Proxy, token string) *http.Client {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	if token != "" {
		u.User = url.UserPassword(token, "x")
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(u),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test's own upstream certificate
	}, Timeout: 30 * time.Second}
}

func hostport(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestProxyAllowsOnlyGrantedEndpoints: a granted run reaches its endpoints over plain HTTP
// (forwarded) and TLS (CONNECT), the upstream never sees the run's token, and everything else —
// another endpoint, no token, an unknown token, a revoked run — is refused with 403 and a reason;
// the summary counts both sides.
func TestProxyAllowsOnlyGrantedEndpoints(t *testing.T) {
	var sawProxyAuth []string
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawProxyAuth = append(sawProxyAuth, r.Header.Get("Proxy-Authorization"))
		fmt.Fprint(w, "plain ok")
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "tls ok")
	}))
	defer secure.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the proxy let a request through to an endpoint outside the grant: %s", r.URL)
	}))
	defer other.Close()

	p := &Proxy{}
	p.Grant("run1", []string{hostport(t, plain.URL), hostport(t, secure.URL)})
	c := proxied(t, p, "run1")
	for _, tc := range []struct{ url, want string }{{plain.URL, "plain ok"}, {secure.URL, "tls ok"}} {
		resp, err := c.Get(tc.url)
		if err != nil {
			t.Fatalf("GET %s through the proxy: %v", tc.url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != tc.want {
			t.Errorf("GET %s: got %d %q, want 200 %q", tc.url, resp.StatusCode, b, tc.want)
		}
	}
	if len(sawProxyAuth) != 1 || sawProxyAuth[0] != "" {
		t.Errorf("the upstream saw Proxy-Authorization %q, want it dropped", sawProxyAuth)
	}

	refused := func(c *http.Client, target, wantReason string) {
		t.Helper()
		resp, err := c.Get(target)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), wantReason) {
				t.Errorf("GET %s: got %d %q, want 403 with %q", target, resp.StatusCode, b, wantReason)
			}
			return
		}
		// A refused CONNECT surfaces as the transport's error naming the status.
		if !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("GET %s: got %v, want a refusal", target, err)
		}
	}
	refused(c, other.URL, "allow-list")
	refused(c, other.URL, "allow-list")
	refused(c, "https://"+hostport(t, other.URL), "")
	if resp, err := proxied(t, p, "").Get(plain.URL); err != nil || resp.StatusCode != http.StatusProxyAuthRequired || resp.Header.Get("Proxy-Authenticate") == "" {
		t.Errorf("a request without a token: got %v %v, want 407 with a Basic challenge", resp, err)
	} else {
		resp.Body.Close()
	}
	refused(proxied(t, p, "nobody"), plain.URL, "unknown")

	s := p.Revoke("run1")
	want := Summary{
		Allowed: []Count{{Target: hostport(t, plain.URL), Count: 1, Rule: hostport(t, plain.URL)}, {Target: hostport(t, secure.URL), Count: 1, Rule: hostport(t, secure.URL)}},
		Refused: []Count{{Target: hostport(t, other.URL), Count: 3, Reason: "not on this run's egress allow-list (add it with --egress-allow " + hostport(t, other.URL) + ")"}},
	}
	sort.Slice(want.Allowed, func(i, j int) bool { return want.Allowed[i].Target < want.Allowed[j].Target })
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("got summary %+v, want %+v", s, want)
	}
	refused(c, plain.URL, "unknown") // after the revoke
	if s := p.Revoke("run1"); len(s.Allowed)+len(s.Refused) != 0 {
		t.Errorf("a second revoke returned %+v, want nothing", s)
	}
}

// TestProxyStreams: a forwarded answer reaches the client chunk by chunk, as the upstream flushes
// it (the CLI's SSE stream), not when it ends.
func TestProxyStreams(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: second\n\n")
	}))
	defer up.Close()
	defer close(release)
	p := &Proxy{}
	p.Grant("run", []string{hostport(t, up.URL)})
	resp, err := proxied(t, p, "run").Get(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("got %q, %v before the upstream finished, want the first event", line, err)
	}
}

// TestControlProtocol: the server's Client and the proxy's Control over pipes: ready with the
// address, grant (a bad endpoint is an error, not a grant), revoke with the summary, and Done
// once the proxy's side ends.
func TestControlProtocol(t *testing.T) {
	toProxy, fromServer := io.Pipe()
	toServer, fromProxy := io.Pipe()
	p := &Proxy{}
	served := make(chan error, 1)
	go func() {
		served <- p.Control(toProxy, fromProxy, "10.0.0.2:3128")
		fromProxy.Close()
	}()
	c := NewClient(toServer, fromServer)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr, err := c.Ready(ctx)
	if err != nil || addr != "10.0.0.2:3128" {
		t.Fatalf("Ready: got %q, %v", addr, err)
	}
	if err := c.Grant(ctx, "tok", []string{"nope"}, nil); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("grant of a bad endpoint: got %v, want an error naming the format", err)
	}
	if err := c.Grant(ctx, "tok", []string{"Provider:18080"}, nil); err != nil {
		t.Fatal(err)
	}
	if r := decide(p, "tok", "provider:18080"); r != "" {
		t.Errorf("after the grant provider:18080 is refused: %s", r)
	}
	decide(p, "tok", "evil:443")
	s, err := c.Revoke(ctx, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Allowed) != 1 || s.Allowed[0].Target != "provider:18080" || len(s.Refused) != 1 || s.Refused[0].Target != "evil:443" {
		t.Errorf("got summary %+v", s)
	}
	fromServer.Close()
	if err := <-served; err != nil {
		t.Errorf("Control ended with %v", err)
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("Done not closed after the proxy ended")
	}
	if err := c.Grant(ctx, "late", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("grant after the end: got %v, want ErrClosed", err)
	}
}

// TestProxyRefusesUnreachable: an allowed endpoint nobody listens on is a 502, not a hang.
func TestProxyRefusesUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &Proxy{}
	p.Grant("run", []string{addr})
	resp, err := proxied(t, p, "run").Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("got %d, want 502", resp.StatusCode)
	}
}

// decide matches and counts one request of token for target as ServeHTTP does, without the
// address check, and returns the refusal reason or "".
func decide(p *Proxy, token, target string) string {
	t, err := parseTarget(target, "https")
	if err != nil {
		return err.Error()
	}
	r, reason := p.rule(token, t)
	p.count(token, t.String(), r.String(), reason, false)
	return reason
}
