package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrEndpoint is wrapped by ParseEndpoint for a malformed endpoint.
var ErrEndpoint = errors.New("want host:port")

// endpoint is a parsed allow-list entry or request target: a DNS name (lowercase ASCII, no
// trailing dot), a wildcard "*.domain" (name is the domain), or an IP address (no zone, never
// IPv4-mapped), and a port.
type endpoint struct {
	name     string
	wildcard bool
	ip       netip.Addr // valid for an IP literal
	port     uint16
}

func (e endpoint) String() string {
	host := e.name
	switch {
	case e.ip.IsValid():
		host = e.ip.String()
	case e.wildcard:
		host = "*." + e.name
	}
	return net.JoinHostPort(host, strconv.Itoa(int(e.port)))
}

// parseHostPort parses "host:port" strictly. It refuses what a string match could be fooled
// by: IPv6 zones ("%"), percent-encoding, userinfo ("@"), IPv4-mapped IPv6 literals, a
// trailing dot beyond one, empty labels, non-ASCII and control characters, names whose last
// label is numeric (an IPv4 address in another spelling), and ports that are not plain
// decimal. defPort is used when the port is missing (0: the port is required). A wildcard
// "*.domain" is accepted only when wild is set (allow-list entries, never request targets).
func parseHostPort(s string, defPort uint16, wild bool) (endpoint, error) {
	for _, c := range s {
		if c <= ' ' || c >= 0x7f || c == '%' || c == '@' || c == '/' || c == '\\' {
			return endpoint{}, fmt.Errorf("character %q is not allowed", c)
		}
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if defPort == 0 || strings.Count(s, ":") > 0 && !strings.HasPrefix(s, "[") {
			return endpoint{}, err
		}
		host, port = s, strconv.Itoa(int(defPort))
		if strings.HasPrefix(s, "[") {
			if !strings.HasSuffix(s, "]") {
				return endpoint{}, errors.New("unclosed [")
			}
			host = s[1 : len(s)-1]
		}
	}
	var e endpoint
	if e.port, err = parsePort(port); err != nil {
		return endpoint{}, err
	}
	if strings.Contains(host, ":") || strings.HasPrefix(s, "[") {
		// Only IPv6 may contain ':' and only IPv6 may be bracketed.
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return endpoint{}, fmt.Errorf("%q is not an IPv6 address", host)
		}
		e.ip = a
		return e, checkIP(a)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		e.ip = a
		return e, checkIP(a)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if wild {
		host, e.wildcard = strings.CutPrefix(host, "*.")
	}
	if !validName(host) {
		return endpoint{}, fmt.Errorf("%q is not a host name or IP address", host)
	}
	e.name = host
	return e, nil
}

func parsePort(s string) (uint16, error) {
	if s == "" || len(s) > 5 || s[0] == '0' || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("port must be 1-65535 in plain decimal")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, errors.New("port must be 1-65535")
	}
	return uint16(n), nil
}

// checkIP refuses addresses that are not one host: zoned, IPv4-mapped (ask for the IPv4
// address itself), unspecified, multicast or broadcast.
func checkIP(a netip.Addr) error {
	switch {
	case a.Zone() != "":
		return errors.New("an IPv6 zone is not allowed")
	case a.Is4In6():
		return errors.New("an IPv4-mapped IPv6 address is not allowed; use the IPv4 address")
	case a.IsUnspecified() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%s is not one host", a)
	}
	return nil
}

// validName accepts DNS-style names: labels of a-z, 0-9, '-' and '_', 1-63 characters, not
// starting or ending with '-', at most 253 characters, and a last label that is not all
// digits (so that no spelling of an IPv4 address passes as a name).
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != "" && !strings.HasPrefix(last, "0x")
}

// ParseEndpoint checks and normalises one allow-list entry: "host:port" with a DNS name, an IP
// address ("[v6]:port" for IPv6) or "*.domain" (every subdomain of domain, not domain itself),
// and a port from 1 to 65535. The host is lowercased, one trailing dot dropped.
func ParseEndpoint(s string) (string, error) {
	e, err := parseHostPort(strings.TrimSpace(s), 0, true)
	if err != nil {
		return "", fmt.Errorf("endpoint %q: %v: %w", s, err, ErrEndpoint)
	}
	return e.String(), nil
}

// Match reports whether target ("host:port" as a run asked for it) is allowed by pattern (a
// ParseEndpoint result). The target is parsed as strictly as by the proxy; an IP literal
// matches only the same IP, never a name or a wildcard; a wildcard matches names below its
// domain only.
func Match(pattern, target string) bool {
	r, err := parseHostPort(pattern, 0, true)
	if err != nil {
		return false
	}
	t, err := parseHostPort(target, 0, false)
	if err != nil {
		return false
	}
	return r.matches(t)
}

func (r endpoint) matches(t endpoint) bool {
	if r.port != t.port {
		return false
	}
	switch {
	case r.ip.IsValid() || t.ip.IsValid():
		return r.ip.IsValid() && t.ip.IsValid() && r.ip == t.ip
	case r.wildcard:
		return strings.HasSuffix(t.name, "."+r.name)
	}
	return r.name == t.name
}

// parseTarget parses a request's host[:port] (the default port of scheme when it has none).
func parseTarget(hostport, scheme string) (endpoint, error) {
	def := uint16(80)
	if scheme == "https" {
		def = 443
	}
	return parseHostPort(hostport, def, false)
}
