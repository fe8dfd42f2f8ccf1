package egress

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProxyAddsTheCredential: a provider request of a run that keeps its credential at the proxy
// (absolute-form http://ProviderHost/<path>, as the run's forwarder sends it) reaches the
// upstream over TLS with the run's path and query, the credential's headers, and none of the
// credential headers the run sent itself (another account's key through the allowed host); the
// run's token never arrives. It counts as a request to the upstream. A run without a credential,
// a credential for an ungranted run and malformed credentials are refused.
func TestProxyAddsTheCredential(t *testing.T) {
	type seen struct{ path, auth, xkey, apikey, proxyAuth, custom, host string }
	got := make(chan seen, 4)
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"),
			r.Header.Get("Api-Key"), r.Header.Get("Proxy-Authorization"), r.Header.Get("X-Custom"), r.Host}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: ok\n\n")
	}))
	defer up.Close()
	upHost := hostport(t, up.URL)
	p := &Proxy{RootCAs: rootsOf(up)}
	p.Grant("run", []string{upHost})
	if err := p.GrantCredential("run", &Credential{Upstream: "https://" + upHost,
		Headers: map[string]string{"x-api-key": "sk-real-123", "X-Custom": "team"}, BasePath: "/v1", Endpoints: []string{"POST /messages"}}); err != nil {
		t.Fatal(err)
	}
	p.Grant("bare", []string{upHost})
	c := proxied(t, p, "run")
	req, _ := http.NewRequest("POST", "http://"+ProviderHost+"/v1/messages?beta=true", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer sk-attacker")
	req.Header.Set("X-Api-Key", "sk-attacker")
	req.Header.Set("Api-Key", "sk-attacker")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "data: ok\n\n" {
		t.Fatalf("got %d %q, want the upstream's answer", resp.StatusCode, body)
	}
	s := <-got
	want := seen{path: "/v1/messages?beta=true", xkey: "sk-real-123", custom: "team", host: upHost}
	if s != want {
		t.Errorf("the upstream saw %+v, want %+v", s, want)
	}

	resp, err = proxied(t, p, "bare").Get("http://" + ProviderHost + "/v1/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a run without a credential got %d, want 403", resp.StatusCode)
	}
	sum := p.Revoke("run")
	if len(sum.Allowed) != 1 || sum.Allowed[0].Target != upHost || sum.Allowed[0].Count != 1 {
		t.Errorf("got summary %+v, want one request to %s", sum, upHost)
	}
	if p.GrantCredential("run", &Credential{Upstream: "https://" + upHost, Endpoints: []string{"POST /messages"}}) == nil {
		t.Error("a credential for a revoked run was accepted")
	}
	p.Grant("x", nil)
	for _, bad := range []Credential{
		{Upstream: "ftp://h:1"}, {Upstream: "https://u:p@h"}, {Upstream: "https://h/v1"}, {Upstream: "https://h%0a:1"},
		{Upstream: "https://h", Headers: map[string]string{"Bad Name": "v"}},
		{Upstream: "https://h", Headers: map[string]string{"X": "v\r\nInjected: 1"}, Endpoints: []string{"POST /m"}},
		{Upstream: "https://h"}, // lent to no endpoint
		{Upstream: "https://h", Endpoints: []string{"DELETE /m"}},
		{Upstream: "https://h", Endpoints: []string{"POST /../admin"}},
		{Upstream: "https://h", BasePath: "/v1/..", Endpoints: []string{"POST /m"}},
		{Upstream: "https://h", BasePath: "/v1/%2e", Endpoints: []string{"POST /m"}},
		{Upstream: "https://h", Endpoints: []string{"POST /m"}, Allowance: Allowance{CostUSD: 1}}, // a cost without a price
	} {
		if err := p.GrantCredential("x", &bad); err == nil {
			t.Errorf("credential %+v was accepted", bad)
		} else if strings.Contains(err.Error(), "v\r\n") {
			t.Errorf("the refusal repeats the header value: %v", err)
		}
	}
}

// TestProxyCredentialUpstreamNotAllowed: a credential whose upstream is not on the run's list is
// refused at the request, counted as a refusal of that upstream.
func TestProxyCredentialUpstreamNotAllowed(t *testing.T) {
	p := &Proxy{}
	p.Grant("run", []string{"other.example:443"})
	if err := p.GrantCredential("run", &Credential{Upstream: "https://api.example", Headers: map[string]string{"Authorization": "Bearer k"},
		BasePath: "/v1", Endpoints: []string{"POST /chat"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := proxied(t, p, "run").Post("http://"+ProviderHost+"/v1/chat", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("got %d, want 403", resp.StatusCode)
	}
	if s := p.Revoke("run"); len(s.Refused) != 1 || s.Refused[0].Target != "api.example:443" {
		t.Errorf("got %+v, want one refusal of api.example:443", s)
	}
}

// TestControlGrantsCredential: the control protocol carries a credential with the grant, a proxy
// announces that it keeps credentials, a bad credential fails the grant (and leaves no grant),
// and the answer never holds the credential.
func TestControlGrantsCredential(t *testing.T) {
	toProxy, fromServer := io.Pipe()
	toServer, fromProxy := io.Pipe()
	wire := &lockedWriter{w: &strings.Builder{}}
	p := &Proxy{}
	go func() {
		_ = p.Control(toProxy, io.MultiWriter(wire, fromProxy), "sock")
		fromProxy.Close()
	}()
	defer fromServer.Close()
	c := NewClient(toServer, fromServer)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Ready(ctx); err != nil || !c.Has(FeatureCredential) || !c.Has(FeatureCredentialPolicy) {
		t.Fatalf("Ready: %v, features announced: %v %v", err, c.Has(FeatureCredential), c.Has(FeatureCredentialPolicy))
	}
	cred := &Credential{Upstream: "https://api.example", Headers: map[string]string{"Authorization": "Bearer sk-secret-9"},
		BasePath: "/v1", Endpoints: []string{"POST /chat/completions"}, Allowance: Allowance{Requests: 3}}
	if err := c.Grant(ctx, "tok", []string{"api.example:443"}, cred); err != nil {
		t.Fatal(err)
	}
	if p.credentialOf("tok") == nil {
		t.Error("the granted credential is not kept")
	}
	if err := c.Grant(ctx, "bad", []string{"api.example:443"}, &Credential{Upstream: "nope"}); err == nil {
		t.Error("a bad credential was granted")
	}
	if _, reason := p.rule("bad", endpoint{name: "api.example", port: 443}); reason != errUnknownRun {
		t.Error("a failed credential grant left a grant")
	}
	if got := wire.String(); strings.Contains(got, "sk-secret-9") {
		t.Errorf("the proxy's answers hold the credential: %s", got)
	}
}

// rootsOf are the roots that trust srv's test certificate.
func rootsOf(srv *httptest.Server) *x509.CertPool {
	return srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
