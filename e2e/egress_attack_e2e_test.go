//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// The egress attacks through the real engine: a hostile run (the fake CLI's
// attack_network) tries every way past the proxy. Each test first proves, with a control
// container on the test's own internal network (nothing guards it but Docker), that the target
// exists and is reachable; then that a provider-mode run cannot reach it. Every target is on
// this machine: the host's own addresses, the test's containers, loopback.

// netAttackControl runs the fake CLI's network attack in a control container on network and
// returns its report.
func netAttackControl(t *testing.T, network, query string) map[string]any {
	t.Helper()
	out := dockerCLI(t, "run", "--rm", "--network", network, "--label", "cline-mcp.test=egress", "--read-only",
		"--cap-drop", "ALL", "--user", "65534:65534", "--entrypoint", "/usr/local/bin/cline", mcpsession.FakeImage,
		"__fake_cline_netattack", query)
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("control report %q: %v", out, err)
	}
	t.Logf("control %s: %v", query, rep)
	return rep
}

// netAttackRun runs attack_network in a Docker call of e and returns its report and result.
func netAttackRun(t *testing.T, e *env, query string) (map[string]any, map[string]any) {
	t.Helper()
	// The checkout is read-only in ask_cline: the marker goes to the container's /tmp.
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Attack fake:attack_network?marker=/tmp/attack-marker.txt&" + query})
	wantDockerOK(t, sc)
	var rep map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
		t.Fatalf("attack report %q: %v", sc["text"], err)
	}
	t.Logf("run %s: %v; warnings %v", query, rep, sc["warnings"])
	if rep["marker"] != "ok" {
		t.Fatalf("the attack did not run (marker %v)", rep["marker"])
	}
	return rep, sc
}

// results are the "result" (or "status") fields of one step list of a report.
func results(rep map[string]any, step, key string) []string {
	var out []string
	list, _ := rep[step].([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		out = append(out, fmt.Sprint(m[key]))
	}
	return out
}

func onlyLoopback(rep map[string]any) bool {
	list, _ := rep["ifaces"].([]any)
	for _, a := range list {
		s := fmt.Sprint(a)
		if !strings.HasPrefix(s, "127.") && s != "::1/128" {
			return false
		}
	}
	return len(list) > 0
}

// hostListeners listens on every address of the host (0.0.0.0 / [::]) with TCP and UDP and
// counts what arrives: TCP connections, and UDP datagrams by their text.
type hostListeners struct {
	tcpPort, udpPort int
	tcp              atomic.Int64
	mu               sync.Mutex
	udp              []string
}

func listenOnHost(t *testing.T) *hostListeners {
	t.Helper()
	h := &hostListeners{}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	h.tcpPort = ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.tcp.Add(1)
			c.Close()
		}
	}()
	pc, err := net.ListenPacket("udp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	h.udpPort = pc.LocalAddr().(*net.UDPAddr).Port
	go func() {
		buf := make([]byte, 512)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			h.mu.Lock()
			h.udp = append(h.udp, string(buf[:n]))
			h.mu.Unlock()
		}
	}()
	return h
}

func (h *hostListeners) gotUDP(nonce string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.udp {
		if s == "fake-cline udp "+nonce {
			return true
		}
	}
	return false
}

// hostAddrs are the addresses of this host a container could try: the test network's gateway,
// the default bridge's, and every non-loopback, non-link-local interface address (IPv4 and
// IPv6), as host:port with port.
func hostAddrs(t *testing.T, gateway string, port int) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	add := func(ip net.IP) {
		if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || seen[ip.String()] {
			return
		}
		seen[ip.String()] = true
		out = append(out, net.JoinHostPort(ip.String(), fmt.Sprint(port)))
	}
	add(net.ParseIP(gateway))
	if gw, err := exec.Command("docker", "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", "bridge").Output(); err == nil {
		for _, f := range strings.Fields(string(gw)) {
			add(net.ParseIP(f))
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && len(out) < 16 {
			add(ipn.IP)
		}
	}
	return out
}

func networkGateway(t *testing.T, network string) string {
	t.Helper()
	return strings.Fields(dockerCLI(t, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", network))[0]
}

// TestDockerEgressAttackHost is the attack on the proxy's host and its other routes: a listener on
// the host bound to every address (TCP and UDP) is reachable from a container on the test's
// internal network through its gateway (the control); a provider-mode run reaches it through
// no address of the host, IPv4 or IPv6, TCP or UDP, and has no interface but loopback.
func TestDockerEgressAttackHost(t *testing.T) {
	w := newEgressWorld(t)
	h := listenOnHost(t)
	gw := networkGateway(t, w.network)
	ctl := netAttackControl(t, w.network, fmt.Sprintf("gwtcp=%d&gwudp=%d&nonce=control", h.tcpPort, h.udpPort))
	if ctl["gateway"] != gw {
		t.Fatalf("control: the container's default gateway is %v, want the test network's %s", ctl["gateway"], gw)
	}
	if r := results(ctl, "tcp", "result"); len(r) != 1 || r[0] != "ok" || h.tcp.Load() != 1 {
		t.Fatalf("control: TCP to the host's listener through the gateway %s: %v (%d accepted); the attack target is not there", gw, r, h.tcp.Load())
	}
	if !mcpsession.Eventually(5*time.Second, func() bool { return h.gotUDP("control") }) {
		t.Fatalf("control: no UDP datagram reached the host's listener through the gateway %s", gw)
	}
	if onlyLoopback(ctl) {
		t.Fatalf("control: the container on the test network reports only loopback addresses: %v", ctl["ifaces"])
	}

	e := newEnv(t, "--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage,
		"--docker-network", w.network, "--egress-allow", w.provider+":18080")
	tcp := hostAddrs(t, gw, h.tcpPort)
	udp := hostAddrs(t, gw, h.udpPort)
	rep, _ := netAttackRun(t, e, fmt.Sprintf("tcp=%s&udp=%s&gwtcp=%d&gwudp=%d&nonce=run", strings.Join(tcp, ","), strings.Join(udp, ","), h.tcpPort, h.udpPort))
	if g, ok := rep["gateway"]; ok {
		t.Errorf("the run's container has a default gateway %v", g)
	}
	tried := results(rep, "tcp", "addr")
	for i, r := range results(rep, "tcp", "result") {
		if r == "ok" {
			t.Errorf("the run connected to the host's listener at %s", tried[i])
		}
	}
	if len(tried) < len(tcp) {
		t.Errorf("the run tried %v, want at least %v", tried, tcp)
	}
	if n := h.tcp.Load(); n != 1 {
		t.Errorf("the host's TCP listener accepted %d connections, want only the control's", n)
	}
	time.Sleep(time.Second) // datagrams in flight, if any
	if h.gotUDP("run") {
		t.Error("a UDP datagram of the run reached the host's listener")
	}
	if !onlyLoopback(rep) {
		t.Errorf("the run's container has addresses besides loopback (a route somewhere): %v", rep["ifaces"])
	}
}

// TestDockerEgressAttackZone is the zone-bypass attack: with a wildcard rule *.domain:18080, a
// CONNECT to [::ffff:<provider's IPv4>%25x.domain]:18080 (the zone ends in the domain; the
// dialer ignores it and dials the IPv4-mapped address) and an absolute-form GET of the same
// must be refused, as must the proxy's own loopback in that spelling. The control: the provider
// is there and reachable, directly from a control container and through the proxy by its
// exact name.
func TestDockerEgressAttackZone(t *testing.T) {
	w := newEgressWorld(t)
	provIP := dockerCLI(t, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", w.provider)
	ctl := netAttackControl(t, w.network, fmt.Sprintf("tcp=%s:18080", provIP))
	if r := results(ctl, "tcp", "result"); len(r) != 1 || r[0] != "ok" {
		t.Fatalf("control: the provider at %s:18080 is not reachable: %v", provIP, r)
	}
	e := newEnv(t, "--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage,
		"--docker-network", w.network, "--egress-allow", w.provider+":18080", "--egress-allow", "*.domain:18080")
	targets := []string{
		fmt.Sprintf("[::ffff:%s%%25x.domain]:18080", provIP),
		fmt.Sprintf("[::ffff:%s%%x.domain]:18080", provIP),
		"[::ffff:127.0.0.1%25x.domain]:3128",
	}
	rep, sc := netAttackRun(t, e, url.Values{
		"get":     {strings.Join([]string{"http://" + w.provider + ":18080/ctl", "http://" + targets[0] + "/", "http://" + targets[2] + "/"}, ",")},
		"connect": {strings.Join(targets, ",")},
	}.Encode())
	got := results(rep, "get", "status")
	if len(got) != 3 || !strings.Contains(got[0], " 200 ") {
		t.Fatalf("control: a GET of the provider by its exact name through the proxy got %v, want 200 first", got)
	}
	for i, s := range append(got[1:], results(rep, "connect", "status")...) {
		if !strings.Contains(s, " 403 ") && !strings.Contains(s, " 400 ") {
			t.Errorf("attack %d through the proxy got %q, want a refusal (403/400)", i, s)
		}
	}
	if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "refused") || !strings.Contains(ws, "x.domain") {
		t.Errorf("got warnings %s, want the refused zone targets named", ws)
	}
}

// TestDockerEgressAttackOtherRun is the attack on another run: two runs of one server at the same
// time. The control: two containers on one network reach each other. Then run A listens on
// every address of its container while run B, started while A runs, connects to every address
// the engine gave A: A has none but loopback, and nothing reaches it.
func TestDockerEgressAttackOtherRun(t *testing.T) {
	w := newEgressWorld(t)
	name := "cline-mcp-test-listener-" + w.network[len(w.network)-10:]
	dockerCLI(t, "run", "-d", "--name", name, "--label", "cline-mcp.test=egress", "--network", w.network, "--read-only",
		"--cap-drop", "ALL", "--user", "65534:65534", "--entrypoint", "/usr/local/bin/cline", mcpsession.FakeImage,
		"__fake_cline_netattack", "listen=:19000&hold=60")
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	ip := dockerCLI(t, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name)
	ok := mcpsession.Eventually(20*time.Second, func() bool {
		r := results(netAttackControl(t, w.network, "tcp="+ip+":19000"), "tcp", "result")
		return len(r) == 1 && r[0] == "ok"
	})
	if !ok {
		t.Fatalf("control: a container on the test network cannot reach another one's listener at %s:19000", ip)
	}

	e := newEnv(t, "--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage,
		"--docker-network", w.network, "--egress-allow", w.provider+":18080", "--max-concurrent", "4")
	pid := e.sess.Cmd.Process.Pid
	var repA map[string]any
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Attack fake:attack_network?marker=/tmp/m.txt&listen=0.0.0.0:19000&hold=8"})
		_ = json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &repA)
	}()
	var addrs []string
	found := mcpsession.Eventually(30*time.Second, func() bool {
		ids, _ := mcpsession.ContainersOf(pid)
		for _, id := range ids {
			out, err := exec.Command("docker", "inspect", "--format", `{{index .Config.Labels "cline-mcp.egress"}}|{{.State.Running}}|{{range .NetworkSettings.Networks}}{{.IPAddress}} {{.GlobalIPv6Address}} {{end}}`, id).Output()
			f := strings.SplitN(strings.TrimSpace(string(out)), "|", 3)
			if err != nil || len(f) != 3 || f[0] != "" || f[1] != "true" {
				continue
			}
			for _, a := range strings.Fields(f[2]) {
				addrs = append(addrs, net.JoinHostPort(a, "19000"))
			}
			return true
		}
		return false
	})
	if !found {
		t.Fatal("run A's container never ran")
	}
	// Without an address of A's, B tries the one A would have on the test network's range and
	// its own loopback (its own namespace: not A's).
	query := "tcp=" + strings.Join(append(addrs, "127.0.0.1:19000", ip+":19000"), ",")
	repB, _ := netAttackRun(t, e, query)
	<-done
	if len(addrs) > 0 {
		t.Errorf("run A's container has addresses %v: it sits on a network other containers share", addrs)
	}
	if repA == nil || repA["marker"] != "ok" {
		t.Fatalf("run A did not run its listener: %v", repA)
	}
	if n := fmt.Sprint(repA["accepted"]); n != "0" {
		t.Errorf("run A's listener accepted %s connections, want 0", n)
	}
	for i, r := range results(repB, "tcp", "result") {
		if r == "ok" {
			t.Errorf("run B connected to %s", strings.Split(strings.TrimPrefix(query, "tcp="), ",")[i])
		}
	}
	if !onlyLoopback(repA) || !onlyLoopback(repB) {
		t.Errorf("the runs have addresses besides loopback: A %v, B %v", repA["ifaces"], repB["ifaces"])
	}
}
