package run

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// placeholderPrefix starts the per-run stand-in for a provider key the container never gets.
const placeholderPrefix = "sk-cline-mcp-placeholder-"

// keyOutside keeps the provider's API key of a container run with the egress proxy, when it
// can: in provider egress mode (Docker; a Kubernetes run always has its pod's egress sidecar),
// for a provider that calls its API with a key in one header and honours a baseUrl
// (cline.KeyAuthOf). The copy then names the forwarder in the run (sandbox.ProviderProxyAddr)
// as its baseUrl and holds a per-run placeholder instead of the key,
// the environment variables that carried the key (--docker-env) carry the placeholder, and the
// returned Credential tells the executor's proxy to add the real key (and the provider's custom
// headers) on the way out. Otherwise it returns nil and records why the key stays inside
// (a.credNote): the copy is today's least-privilege one.
func (p *prep) keyOutside(cp *settings.Copy, extra map[string]string, a *attempt) (*sandbox.Credential, error) {
	// A Kubernetes run's egress sidecar holds it whatever the pod's network (sandbox/kubernetes).
	if a.iso != sandbox.IsolationKubernetes && p.r.cfg.DockerEgress != sandbox.EgressProvider {
		a.credNote = fmt.Sprintf("egress %s has no proxy to hold it", p.r.cfg.DockerEgress)
		return nil, nil
	}
	auth, ok := cline.KeyAuthOf(cp.Target)
	if !ok {
		a.credNote = fmt.Sprintf("provider %s cannot be proxied (OAuth, signed requests, or not verified with Cline %s)", cp.Target, cline.PolicyCLIVersion)
		return nil, nil
	}
	placeholder, err := randomPlaceholder()
	if err != nil {
		return nil, err
	}
	var upstream, basePath string
	taken, err := cp.TakeKey(placeholder, func(old string) (string, error) {
		origin, path, ok := cline.SplitBase(auth.EffectiveBase(old))
		if !ok {
			return "", fmt.Errorf("%w: baseUrl %q", errNoProxy, old)
		}
		if u, _ := url.Parse(origin); u != nil && isLoopbackHost(u.Hostname()) {
			return "", fmt.Errorf("%w: its baseUrl is on loopback", errNoProxy)
		}
		upstream, basePath = origin, path
		return "http://" + sandbox.ProviderProxyAddr + path, nil
	})
	switch {
	case errors.Is(err, settings.ErrNotKeyless), errors.Is(err, errNoProxy):
		a.credNote = fmt.Sprintf("provider %s: %v", cp.Target, err)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("keep the provider's key outside the container: %w", err)
	}
	key := taken.Key
	if key == "" {
		key = extra[auth.EnvKey] // what the CLI would have read: passed with --docker-env
	}
	headers := map[string]string{}
	for name, v := range taken.Headers {
		headers[name] = v
		p.red.Learn(v)
	}
	if key != "" {
		p.red.Learn(key)
		headers[auth.Header] = auth.HeaderValue(key)
		for name, v := range extra {
			if v == key {
				extra[name] = placeholder
			}
		}
	}
	a.placeholder = placeholder
	// Lent only to the API the CLI calls, within what the call may spend (budget.allowance).
	return &sandbox.Credential{Upstream: upstream, Headers: headers, BasePath: basePath,
		Endpoints: cline.APIEndpoints(cp.Target), Allowance: p.budget.allowance(p.modelOf(cp))}, nil
}

var errNoProxy = errors.New("the proxy cannot stand in for it")

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func randomPlaceholder() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return placeholderPrefix + hex.EncodeToString(b), nil
}
