package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// The addresses a rule may reach. The proxy resolves a name itself and dials only addresses
// that pass addressPolicy for the rule that matched, so a name that resolves (or is rebound) to
// somewhere the allow-list did not mean is refused:
//
//   - an IP rule ("10.1.2.3:443") reaches exactly that address: the user named it;
//   - an exact name rule ("api.example.com:443", or the provider's endpoint) reaches what the
//     name resolves to, except loopback, link-local, multicast, unspecified addresses and the
//     proxy's own addresses; private ranges (RFC 1918, RFC 6598, IPv6 ULA) are allowed, because a
//     provider on the user's own network is named exactly;
//   - a wildcard rule ("*.example.com:443") reaches only public unicast addresses: none of the
//     above, no private range, nothing special-purpose (NAT64, 6to4, Teredo, documentation
//     ranges, the host's networks).
var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Loc  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
	benchmark = netip.MustParsePrefix("198.18.0.0/15")
	thisNet   = netip.MustParsePrefix("0.0.0.0/8")
	reserved  = netip.MustParsePrefix("240.0.0.0/4")
)

// addressPolicy returns "" when rule may reach a, else why not. own are the proxy's own
// addresses.
func addressPolicy(rule endpoint, a netip.Addr, own []netip.Addr) string {
	a = a.Unmap()
	if rule.ip.IsValid() {
		if a == rule.ip.Unmap() {
			return ""
		}
		return "not the address the rule names"
	}
	switch {
	case a.IsLoopback(), a.IsUnspecified(), thisNet.Contains(a):
		return "a loopback or unspecified address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(), a.IsMulticast():
		return "a link-local or multicast address"
	}
	for _, o := range own {
		if o.Unmap() == a {
			return "an address of the egress proxy itself"
		}
	}
	if !rule.wildcard {
		return ""
	}
	switch {
	case a.IsPrivate(), cgnat.Contains(a):
		return "a private address, which a wildcard rule never reaches (allow the host by its exact name)"
	case !a.IsGlobalUnicast(), nat64.Contains(a), nat64Loc.Contains(a), sixToFour.Contains(a), teredo.Contains(a),
		benchmark.Contains(a), reserved.Contains(a), isDocumentation(a):
		return "a special-purpose address, which a wildcard rule never reaches"
	}
	return ""
}

func isDocumentation(a netip.Addr) bool {
	for _, p := range []string{"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "192.0.0.0/24"} {
		if netip.MustParsePrefix(p).Contains(a) {
			return true
		}
	}
	return false
}

// addresses resolves t for rule and returns the addresses it may dial, or the reason there is
// none.
func (p *Proxy) addresses(ctx context.Context, rule, t endpoint) ([]netip.Addr, string) {
	var found []netip.Addr
	if t.ip.IsValid() {
		found = []netip.Addr{t.ip}
	} else {
		lookup := p.Resolve
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		lctx, cancel := context.WithTimeout(ctx, DialTimeout)
		addrs, err := lookup(lctx, t.name)
		cancel()
		if err != nil || len(addrs) == 0 {
			return nil, fmt.Sprintf("its name does not resolve (%v)", err)
		}
		found = addrs
	}
	own := ownAddrs()
	var ok []netip.Addr
	var why []string
	for _, a := range found {
		if r := addressPolicy(rule, a, own); r != "" {
			why = append(why, a.Unmap().String()+" is "+r)
			continue
		}
		ok = append(ok, a.Unmap())
	}
	if len(ok) == 0 {
		return nil, "no address it may reach: " + strings.Join(why, "; ")
	}
	return ok, ""
}

// ownAddrs are the addresses of this machine's (the proxy container's) interfaces.
func ownAddrs() []netip.Addr {
	list, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	out := make([]netip.Addr, 0, len(list))
	for _, a := range list {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out
}
