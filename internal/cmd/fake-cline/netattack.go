package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// helperNetAttack is the hidden argv[1] that runs attack_network's steps outside a CLI session
// and prints the JSON report: `cline __fake_cline_netattack '<query>'`. The egress tests run it
// in a control container on an ordinary test network, to prove first that each target exists
// and is reachable when nothing guards the network.
const helperNetAttack = "__fake_cline_netattack"

func netAttackMain(args []string) int {
	q := ""
	if len(args) > 0 {
		q = args[0]
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		fmt.Fprintln(os.Stderr, "netattack:", err)
		return 2
	}
	fmt.Println(string(appendJSON(nil, netAttack(v))))
	return 0
}

// runAttackNetwork is attack_network: the network attacks of a hostile run, after the marker.
func runAttackNetwork(s *session) int {
	return s.attack(func(r *obj) { *r = append(*r, netAttack(s.params)...) })
}

// netAttack tries every way out it is given and reports each result (a list per kind, in the
// order given; comma-separated values):
//   - tcp=<addr,...>: a direct TCP connect (IPv4 or [IPv6]);
//   - udp=<addr,...>: three datagrams "fake-cline udp <nonce=>" each (UDP has no answer: the
//     listener is the witness);
//   - connect=<target,...>: a CONNECT of target exactly as written, through HTTPS_PROXY;
//   - get=<url,...>: an absolute-form GET of url exactly as written, through HTTP_PROXY;
//   - listen=<addr> and hold=<seconds>: listen on addr while the steps run and for hold seconds
//     after, counting connections (what a concurrent run could reach);
//   - gwtcp=<port>, gwudp=<port>: the same to the container's default gateway (from
//     /proc/net/route), reported as gateway when there is one;
//   - always: ifaces, the container's interface addresses.
func netAttack(v url.Values) obj {
	list := func(k string) []string {
		if v.Get(k) == "" {
			return nil
		}
		return strings.Split(v.Get(k), ",")
	}
	var accepted chan int
	var ln net.Listener
	if a := v.Get("listen"); a != "" {
		var err error
		if ln, err = net.Listen("tcp", a); err == nil {
			accepted = make(chan int, 1)
			go countAccepts(ln, accepted)
		}
	}
	r := obj{{"ifaces", interfaceAddrs()}}
	var tcp, udp, conn, get []any
	tcpTargets, udpTargets := list("tcp"), list("udp")
	if gw := defaultGateway(); gw != "" {
		// The container's own gateway (the host, on a bridge network), on the given ports.
		r = append(r, kv{"gateway", gw})
		if p := v.Get("gwtcp"); p != "" {
			tcpTargets = append(tcpTargets, net.JoinHostPort(gw, p))
		}
		if p := v.Get("gwudp"); p != "" {
			udpTargets = append(udpTargets, net.JoinHostPort(gw, p))
		}
	}
	for _, a := range tcpTargets {
		c, err := net.DialTimeout("tcp", a, 2*time.Second)
		if err == nil {
			c.Close()
		}
		tcp = append(tcp, obj{{"addr", a}, {"result", errString(err)}})
	}
	for _, a := range udpTargets {
		udp = append(udp, obj{{"addr", a}, {"result", errString(sendUDP(a, "fake-cline udp "+v.Get("nonce")))}})
	}
	for _, t := range list("connect") {
		conn = append(conn, rawProxy("HTTPS_PROXY", "CONNECT", t, "x"))
	}
	for _, u := range list("get") {
		get = append(get, rawProxy("HTTP_PROXY", "GET", u, "x"))
	}
	r = append(r, kv{"tcp", tcp}, kv{"udp", udp}, kv{"connect", conn}, kv{"get", get})
	if ln != nil {
		time.Sleep(time.Duration(atoiDef(v.Get("hold"), 0)) * time.Second)
		ln.Close()
		r = append(r, kv{"accepted", <-accepted})
	}
	return r
}

func countAccepts(ln net.Listener, out chan<- int) {
	n := 0
	for {
		c, err := ln.Accept()
		if err != nil {
			out <- n
			return
		}
		n++
		c.Close()
	}
}

func sendUDP(addr, msg string) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	for range 3 {
		if _, err := c.Write([]byte(msg)); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// rawProxy sends "<method> <target> HTTP/1.1" to the proxy in the environment variable env,
// with its credentials, exactly as written (no client normalises the target), and reports the
// status line.
func rawProxy(env, method, target, host string) obj {
	p := os.Getenv(env)
	if p == "" {
		return obj{{"target", target}, {"result", "no " + env}}
	}
	pu, err := url.Parse(p)
	if err != nil {
		return obj{{"target", target}, {"result", err.Error()}}
	}
	conn, err := net.DialTimeout("tcp", pu.Host, 5*time.Second)
	if err != nil {
		return obj{{"target", target}, {"result", err.Error()}}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	auth := ""
	if pu.User != nil {
		pw, _ := pu.User.Password()
		auth = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":"+pw)) + "\r\n"
	}
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", method, target, host, auth)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return obj{{"target", target}, {"result", err.Error()}}
	}
	return obj{{"target", target}, {"result", "answered"}, {"status", strings.TrimSpace(line)}}
}

func interfaceAddrs() []string {
	list, err := net.InterfaceAddrs()
	if err != nil {
		return []string{err.Error()}
	}
	out := make([]string, 0, len(list))
	for _, a := range list {
		out = append(out, a.String())
	}
	return out
}

func atoiDef(s string, def int) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return def
		}
		n = n*10 + int(c-'0')
	}
	if s == "" {
		return def
	}
	return n
}

// defaultGateway is the IPv4 default gateway of /proc/net/route, or "".
func defaultGateway() string {
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "00000000" || len(f[2]) != 8 {
			continue
		}
		var ip [4]byte
		for i := range 4 {
			n, err := strconv.ParseUint(f[2][2*i:2*i+2], 16, 8)
			if err != nil {
				return ""
			}
			ip[3-i] = byte(n) // little-endian hex
		}
		return net.IP(ip[:]).String()
	}
	return ""
}
