package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

// TestMatchOddForms: targets that a string match could be fooled by never match a rule they
// only look like — zones ending in an allowed domain, IPv4-mapped literals, percent-encoding,
// userinfo, extra dots, empty labels, non-ASCII, numeric spellings of addresses — and an IP
// literal matches only the same IP rule.
func TestMatchOddForms(t *testing.T) {
	for _, tc := range []struct {
		pattern, target string
		want            bool
	}{
		{"*.domain:8080", "[::ffff:172.17.0.5%x.domain]:8080", false},
		{"*.domain:8080", "[::ffff:127.0.0.1%25x.domain]:8080", false},
		{"*.domain:8080", "[fe80::1%eth0.x.domain]:8080", false},
		{"*.domain:8080", "x.domain%00:8080", false},
		{"*.domain:8080", "x%2edomain:8080", false},
		{"*.domain:8080", "user@x.domain:8080", false},
		{"*.domain:8080", "x.domain..:8080", false},
		{"*.domain:8080", "x..domain:8080", false},
		{"*.domain:8080", ".x.domain:8080", false},
		{"*.domain:8080", "x.dömain:8080", false},
		{"*.domain:8080", "x.domain:+8080", false},
		{"*.domain:8080", "x.domain:08080", false},
		{"*.domain:8080", "x.domain.:8080", true},
		{"*.domain:8080", "X.Domain:8080", true},
		{"*.1:8080", "127.0.0.1:8080", false},
		{"*.0.0.1:8080", "127.0.0.1:8080", false},
		{"10.1.2.3:443", "10.1.2.3:443", true},
		{"10.1.2.3:443", "[::ffff:10.1.2.3]:443", false},
		{"10.1.2.3:443", "010.1.2.3:443", false},
		{"10.1.2.3:443", "167838211:443", false},
		{"[2001:db8::1]:443", "[2001:db8::1]:443", true},
		{"[2001:db8::1]:443", "[2001:db8::1%1]:443", false},
		{"provider:18080", "provider:18080", true},
		{"provider:18080", "10.0.0.2:18080", false},
	} {
		if got := Match(tc.pattern, tc.target); got != tc.want {
			t.Errorf("Match(%q, %q): got %v, want %v", tc.pattern, tc.target, got, tc.want)
		}
	}
	for _, bad := range []string{"[::ffff:1.2.3.4]:443", "[fe80::1%eth0]:443", "0.0.0.0:443", "[::]:443", "224.0.0.1:443",
		"a..b:443", "a.b..:443", "ü.com:443", "1.2.3.4.5:443", "host:0443", "x@y:443", "*.*.com:443", "a.*.com:443", "0x7f.1:443"} {
		if got, err := ParseEndpoint(bad); err == nil {
			t.Errorf("ParseEndpoint(%q) = %q, want an error", bad, got)
		}
	}
}

// TestProxyRefusesZoneBypass is the zone-bypass attack at the proxy: with a wildcard rule, a
// CONNECT or an absolute-form GET to an IPv4-mapped literal whose zone ends in the domain must
// not reach the address (here a listener on the proxy's own loopback). The listener is first
// reached through an exact IP rule, so the refusal is the matcher's.
func TestProxyRefusesZoneBypass(t *testing.T) {
	hit := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit++
		fmt.Fprint(w, "reached")
	}))
	defer up.Close()
	_, port, _ := net.SplitHostPort(hostport(t, up.URL))
	srv := httptest.NewServer(&Proxy{})
	defer srv.Close()
	p := srv.Config.Handler.(*Proxy)
	p.Grant("ctl", []string{"127.0.0.1:" + port})
	p.Grant("run", []string{"*.domain:" + port})
	if got := rawRequest(t, srv, "ctl", "CONNECT", "127.0.0.1:"+port); !strings.Contains(got, " 200 ") {
		t.Fatalf("the control CONNECT with an exact rule got %q, want 200", got)
	}
	for _, target := range []string{"[::ffff:127.0.0.1%25x.domain]:" + port, "[::ffff:127.0.0.1%x.domain]:" + port} {
		if got := rawRequest(t, srv, "run", "CONNECT", target); !strings.Contains(got, " 403 ") && !strings.Contains(got, " 400 ") {
			t.Errorf("CONNECT %s: got %q, want a refusal", target, got)
		}
		if got := rawRequest(t, srv, "run", "GET", "http://"+target+"/"); !strings.Contains(got, " 403 ") && !strings.Contains(got, " 400 ") {
			t.Errorf("GET http://%s/: got %q, want a refusal", target, got)
		}
	}
	if hit != 0 {
		t.Errorf("the upstream was reached %d times through a zone", hit)
	}
	s := p.Revoke("run")
	if len(s.Allowed) != 0 || len(s.Refused) == 0 {
		t.Errorf("got summary %+v, want only refusals", s)
	}
}

// rawRequest sends one proxy request line as written (no client normalisation) with token and
// returns the status line.
func rawRequest(t *testing.T, srv *httptest.Server, token, method, target string) string {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Basic %s\r\n\r\n", method, target, basic(token))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err.Error()
	}
	return line
}

func basic(token string) string { return b64(token + ":x") }

// TestAddressPolicy: the proxy resolves names itself and dials only what the matching rule may
// reach: a wildcard never reaches a private, loopback or link-local address (a name of an
// allowed domain pointed at the host), an exact name reaches a private address but not
// loopback, an IP rule reaches its address.
func TestAddressPolicy(t *testing.T) {
	dialled := []string{}
	p := &Proxy{
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "loop.domain", "provider":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "lan.domain", "lan":
				return []netip.Addr{netip.MustParseAddr("10.0.0.7")}, nil
			case "meta.domain", "meta":
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			case "mapped.domain":
				return []netip.Addr{netip.MustParseAddr("::ffff:192.168.1.1")}, nil
			case "pub.domain":
				return []netip.Addr{netip.MustParseAddr("10.0.0.8"), netip.MustParseAddr("8.8.8.8")}, nil
			}
			return nil, errors.New("no such host")
		},
		Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
			dialled = append(dialled, addr)
			return nil, errors.New("test: not dialling")
		},
	}
	p.Grant("run", []string{"*.domain:443", "lan:443", "provider:443", "meta:443", "10.9.9.9:443"})
	for _, tc := range []struct {
		target string
		ok     bool
	}{
		{"loop.domain:443", false}, {"lan.domain:443", false}, {"meta.domain:443", false}, {"mapped.domain:443", false},
		{"pub.domain:443", true}, {"lan:443", true}, {"provider:443", false}, {"meta:443", false}, {"10.9.9.9:443", true},
	} {
		tt, _ := parseTarget(tc.target, "https")
		r, reason := p.rule("run", tt)
		if reason != "" {
			t.Fatalf("%s: no rule: %s", tc.target, reason)
		}
		addrs, why := p.addresses(context.Background(), r, tt)
		if (why == "") != tc.ok {
			t.Errorf("%s: got %v %q, want allowed=%v", tc.target, addrs, why, tc.ok)
		}
		if tc.target == "pub.domain:443" && (len(addrs) != 1 || addrs[0].String() != "8.8.8.8") {
			t.Errorf("pub.domain: got %v, want only its public address", addrs)
		}
	}
}

func b64(s string) string {
	return base64.StdEncoding.EncodeToString([]byte(s))
}
