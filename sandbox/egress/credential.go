package egress

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

// ProviderHost is the reserved host of a run's provider requests when its credential stays with
// the proxy: the forwarder in the run's container (`forward -provider`) sends each request the
// run made to its own loopback (ProviderAddr) as an absolute-form http://ProviderHost/<path>
// request with the run's token, and the proxy forwards it to the run's granted upstream with the
// credential added. The name is under .invalid: it can never be a real endpoint.
const ProviderHost = "provider.cline-mcp.invalid"

// ProviderAddr is where the forwarder listens for the run's provider requests (the run's
// settings copy names http://ProviderAddr/<the provider's base path> as its baseUrl).
const ProviderAddr = "127.0.0.1:3129"

// FeatureCredential is announced in ready by a proxy that keeps credentials (grant.credential).
const FeatureCredential = "credential"

// Credential is what a grant asks the proxy to add to the run's provider requests: the
// upstream origin (https://host[:port], or http:// when the user's own endpoint is plain http)
// and the headers to set. The values never leave the proxy: not in answers, logs or counts.
type Credential struct {
	Upstream string            `json:"upstream"`
	Headers  map[string]string `json:"headers"`
}

// strippedHeaders are removed from every provider request before the credential's own headers
// are set: whatever credential the run sent (another account's, through the allowed host) goes.
var strippedHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Proxy-Authorization", "Cookie"}

// credential is a parsed Credential.
type credential struct {
	scheme  string // https or http
	host    string // as the upstream names it (the Host header and TLS name)
	target  endpoint
	headers http.Header
}

func parseCredential(c *Credential) (*credential, error) {
	u, err := url.Parse(c.Upstream)
	if err != nil {
		return nil, fmt.Errorf("credential upstream: %w", err)
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.User != nil || u.Host == "" || u.Opaque != "" ||
		strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("credential upstream: want https://host[:port] without user info or path")
	}
	t, err := parseTarget(u.Host, u.Scheme)
	if err != nil {
		return nil, fmt.Errorf("credential upstream: %w", err)
	}
	h := http.Header{}
	for k, v := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") || strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("credential header %q is not a valid header", printable(k))
		}
		h.Set(k, v)
	}
	return &credential{scheme: u.Scheme, host: u.Host, target: t, headers: h}, nil
}

// GrantCredential makes the proxy add c to the provider requests of the run with token (see
// ProviderHost); the run must have been granted first, and c's upstream must be on its list to
// be reached. Revoke forgets it.
func (p *Proxy) GrantCredential(token string, c *Credential) error {
	pc, err := parseCredential(c)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.grants[token]
	if g == nil {
		return fmt.Errorf("credential for a run that was not granted")
	}
	g.cred = pc
	return nil
}

// credentialOf is the run's credential, or nil.
func (p *Proxy) credentialOf(token string) *credential {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g := p.grants[token]; g != nil {
		return g.cred
	}
	return nil
}

// forwardCredential sends a provider request (already checked against the run's grant) to the
// credential's upstream — the run's path and query, the upstream's host — with the run's own
// credential headers replaced, and streams the answer back.
func (p *Proxy) forwardCredential(w http.ResponseWriter, r *http.Request, c *credential) {
	p.once.Do(p.initTransports)
	target := c.target.String()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *pr.In.URL
			u.Scheme, u.Host, u.User = c.scheme, c.host, nil
			pr.Out.URL = &u
			pr.Out.Host = c.host
			for _, h := range strippedHeaders {
				pr.Out.Header.Del(h)
			}
			for k, v := range c.headers {
				pr.Out.Header[k] = v
			}
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

// initTransports makes the forwarding transport: plain HTTP for absolute-form requests, TLS
// (verified against RootCAs, else the system's roots) for credential upstreams; either dials
// only the addresses ServeHTTP checked.
func (p *Proxy) initTransports() {
	p.transport = &http.Transport{
		Proxy:               nil,
		DialContext:         p.dialChecked,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: DialTimeout,
		DisableCompression:  true,
	}
	p.transport.TLSClientConfig = &tls.Config{RootCAs: p.RootCAs, MinVersion: tls.VersionTLS12}
}
