package egress

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
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

// FeatureCredentialPolicy is announced by a proxy that lends a credential only to the grant's
// endpoints (Credential.Endpoints), scrubs it from answers and enforces Credential.Allowance: a
// server keeps a key outside only with such a proxy.
const FeatureCredentialPolicy = "credential-policy"

// FeatureSettle is announced by a proxy that settles a run between two uses of its container
// (Proxy.Settle): the kept container of a key-less session.
const FeatureSettle = "settle"

// Credential is what a grant asks the proxy to add to the run's provider requests: the
// upstream origin (https://host[:port], or http:// when the user's own endpoint is plain http)
// and the headers to set. The values never leave the proxy: not in answers (scrubbed), logs or
// counts. They are added only to the requests Endpoints names below BasePath; every other
// method or path of the upstream is refused (PolicyDenied).
type Credential struct {
	Upstream string            `json:"upstream"`
	Headers  map[string]string `json:"headers"`
	// BasePath is the path of the provider's base URL ("/v1"; "" for none).
	BasePath string `json:"basePath,omitempty"`
	// Endpoints are "METHOD /suffix" (GET or POST) below BasePath: "POST /chat/completions".
	// A credential without endpoints is refused.
	Endpoints []string `json:"endpoints,omitempty"`
	// Allowance bounds what the run may spend with the credential.
	Allowance Allowance `json:"allowance,omitempty"`
}

// strippedHeaders are removed from every provider request before the credential's own headers
// are set: whatever credential the run sent (another account's, through the allowed host) goes.
var strippedHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Proxy-Authorization", "Cookie"}

// credential is a parsed Credential.
type credential struct {
	scheme    string // https or http
	host      string // as the upstream names it (the Host header and TLS name)
	target    endpoint
	headers   http.Header
	endpoints []apiEndpoint
	secrets   [][]byte // scrubbed from answers
	spend     *spend   // guarded by Proxy.mu
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
	eps, err := parseEndpoints(c.BasePath, c.Endpoints)
	if err != nil {
		return nil, err
	}
	a := c.Allowance
	if a.Requests < 0 || a.CostUSD < 0 || a.InputUSDPerMTok < 0 || a.OutputUSDPerMTok < 0 ||
		a.CostUSD > 0 && a.InputUSDPerMTok == 0 && a.OutputUSDPerMTok == 0 {
		return nil, fmt.Errorf("credential allowance: want non-negative limits and a price for a cost limit")
	}
	return &credential{scheme: u.Scheme, host: u.Host, target: t, headers: h, endpoints: eps,
		secrets: secretsOf(h), spend: &spend{allowance: a}}, nil
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

// forwardCredential sends a provider request (already checked against the run's grant, its
// endpoints and its allowance) to the credential's upstream — the run's path and query, the
// upstream's host — with the run's own credential headers replaced, asking for an unencoded
// answer, and streams the answer back with every credential value scrubbed from its headers and
// body; what the answer used counts against the run's allowance. An encoded answer, which the
// scrubber cannot read, is refused (502).
func (p *Proxy) forwardCredential(w http.ResponseWriter, r *http.Request, c *credential, token string) {
	p.once.Do(p.initTransports)
	target := c.target.String()
	var sent countingBody
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
			pr.Out.Header.Set("Accept-Encoding", "identity")
			// No protocol switch: its bytes would pass the scrubber by.
			for _, h := range []string{"TE", "Upgrade", "Connection", "Http2-Settings"} {
				pr.Out.Header.Del(h)
			}
			if pr.Out.Body != nil && pr.Out.Body != http.NoBody {
				sent.r = pr.Out.Body
				pr.Out.Body = &sent
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
				return errEncoded
			}
			if resp.StatusCode == http.StatusSwitchingProtocols {
				return errUpgrade
			}
			p.meter(token, resp, sent.count)
			scrubHeader(resp.Header, c.secrets)
			resp.Trailer = nil // filled only as the body ends: past the scrubber
			resp.Header.Del("Trailer")
			resp.Header.Del("Content-Length")
			resp.ContentLength = -1
			resp.Body = newScrubReader(resp.Body, c.secrets)
			return nil
		},
		Transport:     p.transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			p.logf("forward %s: %v", target, err)
			if errors.Is(err, errEncoded) || errors.Is(err, errUpgrade) {
				http.Error(w, "cline-mcp egress proxy: "+err.Error(), http.StatusBadGateway)
				return
			}
			http.Error(w, fmt.Sprintf("cline-mcp egress proxy: cannot reach %s: %v", target, err), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

var errUpgrade = errors.New("the provider switched protocols although asked for none: the proxy cannot check such an answer for the credential, so it is not passed on")

var errEncoded = errors.New("the provider answered with a Content-Encoding although asked for none: the proxy cannot check such an answer for the credential, so it is not passed on")

// countingBody counts the bytes of a request body as they are sent.
type countingBody struct {
	r io.ReadCloser
	n atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (b *countingBody) Close() error { return b.r.Close() }

func (b *countingBody) count() int64 { return b.n.Load() }

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
