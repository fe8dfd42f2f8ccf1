package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzMatch: whatever a run sends as a target, a match means the target is plain (no zone,
// '%', '@', control or non-ASCII character), an IP literal matched only the same IP rule, a
// wildcard matched only a name below its domain, and ParseEndpoint is idempotent on rules.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"*.domain:8080", "[::ffff:127.0.0.1%25x.domain]:8080"},
		{"*.domain:8080", "x.domain:8080"},
		{"10.1.2.3:443", "[::ffff:10.1.2.3]:443"},
		{"[2001:db8::1]:443", "[2001:db8::1%eth0]:443"},
		{"api.openai.com:443", "API.openai.com.:443"},
		{"*.amazonaws.com:443", "a..amazonaws.com:443"},
		{"provider_1:18080", "user@provider_1:18080"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, target string) {
		norm, err := ParseEndpoint(pattern)
		if err != nil {
			return
		}
		if again, err := ParseEndpoint(norm); err != nil || again != norm {
			t.Fatalf("ParseEndpoint(%q) = %q, then %q, %v", pattern, norm, again, err)
		}
		if !Match(norm, target) {
			return
		}
		if strings.ContainsAny(target, "%@/\\") {
			t.Fatalf("%q matched %q", target, norm)
		}
		for _, c := range target {
			if c <= ' ' || c >= 0x7f {
				t.Fatalf("%q with %q matched %q", target, c, norm)
			}
		}
		tt, err := parseTarget(target, "https")
		if err != nil {
			t.Fatalf("%q matched %q but does not parse: %v", target, norm, err)
		}
		r, _ := parseHostPort(norm, 0, true)
		switch {
		case tt.ip.IsValid():
			if !r.ip.IsValid() || r.ip != tt.ip || tt.ip.Zone() != "" || tt.ip.Is4In6() {
				t.Fatalf("IP target %q matched %q", target, norm)
			}
		case r.wildcard:
			if _, err := netip.ParseAddr(tt.name); err == nil || !strings.HasSuffix(tt.name, "."+r.name) {
				t.Fatalf("%q matched wildcard %q", target, norm)
			}
		}
	})
}
