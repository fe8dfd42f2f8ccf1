// Package egress is the egress proxy of Docker runs: a small HTTP proxy (CONNECT tunnels and
// absolute-form forwarding) through which a container on a network without a route out reaches
// exactly the endpoints its run was granted, and the JSON-lines protocol the server uses to grant
// and revoke runs and to collect what was refused.
//
// The proxy runs alone in its own container (cmd/cline-mcp-egress in the FROM scratch image
// images/egress): the only container of a server with a leg on a network that leads out. Each
// run gets a random token; the run's container finds the proxy through HTTPS_PROXY/HTTP_PROXY
// with the token as the user name (http://<token>:x@<proxy>:3128), which the Cline CLI (a Bun
// binary) sends as Proxy-Authorization on every CONNECT and forwarded request. A request without
// a granted token, or for an endpoint outside its run's grant, is refused with 403 and a reason,
// and counted per run; the counts (endpoint, number, reason — never a payload) are what Revoke
// returns.
//
// The package imports only the standard library.
package egress

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Port is where the proxy listens in its container.
const Port = 3128

// ErrEndpoint is wrapped by ParseEndpoint for a malformed endpoint.
var ErrEndpoint = errors.New("want host:port")

// ParseEndpoint checks and normalises one allow-list entry: "host:port" with a DNS name, an IP
// address ("[v6]:port" for IPv6) or "*.domain" (every subdomain of domain, not domain itself), and
// a port from 1 to 65535. The host is lowercased.
func ParseEndpoint(s string) (string, error) {
	host, port, err := net.SplitHostPort(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("endpoint %q: %w", s, ErrEndpoint)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("endpoint %q: port must be 1-65535: %w", s, ErrEndpoint)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	name := strings.TrimPrefix(host, "*.")
	if net.ParseIP(host) == nil && !validName(name) {
		return "", fmt.Errorf("endpoint %q: %q is not a host name or IP address: %w", s, host, ErrEndpoint)
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// validName accepts DNS-style names: labels of letters, digits, '-' and '_', not starting or
// ending with '-'.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Match reports whether target ("host:port", normalised) is allowed by pattern (a ParseEndpoint
// result).
func Match(pattern, target string) bool {
	ph, pp, err := net.SplitHostPort(pattern)
	if err != nil {
		return false
	}
	th, tp, err := net.SplitHostPort(target)
	if err != nil || pp != tp {
		return false
	}
	if suffix, ok := strings.CutPrefix(ph, "*."); ok {
		return strings.HasSuffix(th, "."+suffix)
	}
	return ph == th
}

// normalTarget lowercases a request's host:port, adding the default port of scheme.
func normalTarget(hostport, scheme string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		var aerr *net.AddrError
		if !errors.As(err, &aerr) || !strings.Contains(aerr.Err, "missing port") {
			return "", err
		}
		host, port = strings.Trim(hostport, "[]"), "80"
		if scheme == "https" {
			port = "443"
		}
	}
	if host == "" {
		return "", errors.New("empty host")
	}
	return net.JoinHostPort(strings.ToLower(strings.TrimSuffix(host, ".")), port), nil
}

// Count is how often a run reached (or was refused) one endpoint.
type Count struct {
	Target string `json:"target"`
	Count  int    `json:"count"`
	Reason string `json:"reason,omitempty"` // refusals only
}

// Summary is what a run did through the proxy.
type Summary struct {
	Allowed []Count `json:"allowed,omitempty"`
	Refused []Count `json:"refused,omitempty"`
}
