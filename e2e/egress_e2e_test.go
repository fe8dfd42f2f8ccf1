//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// egressWorld is a network the test creates (internal: nothing on it has a route out) with a
// fake provider container on it: the "outside" the egress proxy leads to.
type egressWorld struct {
	network  string // the test's internal network, the proxy's way "out"
	provider string // the fake provider's container name, reachable on network as <name>:18080
}

func newEgressWorld(t *testing.T) egressWorld {
	t.Helper()
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	w := egressWorld{network: "cline-mcp-test-egress-" + id, provider: "cline-mcp-test-provider-" + id}
	dockerCLI(t, "network", "create", "--internal", "--label", "cline-mcp.test=egress", w.network)
	// Removed after the server's own cleanup (registered later, run earlier): its proxy leaves
	// the network when the server stops.
	t.Cleanup(func() {
		_ = exec.Command("docker", "rm", "-f", w.provider).Run()
		if out, err := exec.Command("docker", "network", "rm", w.network).CombinedOutput(); err != nil {
			t.Errorf("remove the test network %s (something of the server still on it?): %v %s", w.network, err, out)
		}
	})
	dockerCLI(t, "run", "-d", "--name", w.provider, "--label", "cline-mcp.test=egress", "--network", w.network,
		"--read-only", "--cap-drop", "ALL", "--user", "65534:65534", "--entrypoint", "/usr/local/bin/cline",
		mcpsession.FakeImage, "__fake_cline_serve", ":18080")
	deadline := time.Now().Add(time.Minute)
	for {
		out, _ := exec.Command("docker", "logs", w.provider).CombinedOutput()
		if strings.Contains(string(out), "serving") {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake provider did not start: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func dockerCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// probeNet runs the fake CLI's network probe in a Docker call and returns its report and result.
func probeNet(t *testing.T, e *env, query string) (map[string]any, map[string]any) {
	t.Helper()
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Probe fake:probe_net?" + query})
	wantDockerOK(t, sc)
	var rep map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
		t.Fatalf("probe report %q: %v", sc["text"], err)
	}
	t.Logf("probe %s: %v; warnings %v", query, rep, sc["warnings"])
	return rep, sc
}

func field(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	return fmt.Sprint(cur)
}

// networksOf lists the networks labelled with the instance of the server with this pid.
func networksOf(t *testing.T, pid int) []string {
	t.Helper()
	out := dockerCLI(t, "network", "ls", "--filter", "label=cline-mcp.instance", "--format", `{{.Name}} {{.Label "cline-mcp.instance"}}`)
	var mine []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && strings.Contains(f[1], fmt.Sprintf("-%d-", pid)) {
			mine = append(mine, f[0])
		}
	}
	return mine
}

// TestDockerEgressProvider: with the default egress, a Docker run reaches its allowed endpoint
// (a fake provider on the test's internal network, named in --egress-allow) through the proxy,
// and nothing else: a direct TCP connect to that same provider, DNS lookups, and a proxy CONNECT
// to another endpoint all fail, and the result's warning names the refused endpoint. The proxy
// is one per server (a second call reuses it) and gone when it stops.
func TestDockerEgressProvider(t *testing.T) {
	w := newEgressWorld(t)
	e := newEnv(t, "--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage,
		"--docker-network", w.network, "--egress-allow", w.provider+":18080")
	prov := w.provider + ":18080"
	// The provider's address, so the direct connect needs no name lookup.
	provIP := dockerCLI(t, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", w.provider)
	rep, sc := probeNet(t, e, fmt.Sprintf("get=http://%s/hello&connect=blocked.invalid:443&addr=%s:18080&host=%s", prov, provIP, w.provider))
	if field(rep, "get", "status") != "200" || field(rep, "get", "head") != "fake provider ok /hello" {
		t.Errorf("the allowed provider was not reached through the proxy: %v", rep["get"])
	}
	if field(rep, "tcp", "result") == "ok" {
		t.Errorf("a direct TCP connect to the provider at %s:18080 succeeded: the container has a way around the proxy", provIP)
	}
	if r := field(rep, "dns", "result"); r == "ok" {
		t.Errorf("the provider's name resolved inside the container: %v", rep["dns"])
	}
	if s := field(rep, "connect", "status"); !strings.Contains(s, " 403 ") {
		t.Errorf("a CONNECT to blocked.invalid:443 got %q, want 403", s)
	}
	if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "refused blocked.invalid:443 once") || !strings.Contains(ws, "--egress-allow") {
		t.Errorf("got warnings %s, want the refused endpoint named with the fix", ws)
	}

	// A name outside: the container's resolver answers nothing (a real NXDOMAIN would mean the
	// query reached a resolver outside), and the server's proxy is the one from the first call.
	rep, sc = probeNet(t, e, "addr=192.0.2.1:443&host=egress-probe.invalid&get=http://unlisted.invalid:18080/")
	if r := field(rep, "dns", "result"); r == "ok" || strings.Contains(r, "no such host") {
		t.Errorf("DNS inside the container answered %q: a resolver outside was reached", r)
	}
	if field(rep, "tcp", "result") == "ok" {
		t.Error("a direct TCP connect left the run (it has no network but loopback)")
	}
	if s := field(rep, "get", "status"); s != "403" {
		t.Errorf("a GET of an unlisted endpoint through the proxy got %v, want 403", rep["get"])
	}
	if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "refused unlisted.invalid:18080") {
		t.Errorf("got warnings %s, want the refused endpoint named", ws)
	}
	pid := e.sess.Cmd.Process.Pid
	if ids, _ := mcpsession.ContainersOf(pid); len(ids) != 1 {
		t.Errorf("between calls the server has %d containers, want exactly its one egress proxy: %v", len(ids), ids)
	}
	// The runs have no network at all (they reach the proxy through its volume's socket), so
	// the server makes no network of its own.
	if nets := networksOf(t, pid); len(nets) != 0 {
		t.Errorf("the server's networks: %v, want none", nets)
	}
	e.sess.Stop()
	if ids, _ := mcpsession.ContainersOf(pid); len(ids) > 0 {
		t.Errorf("containers left after the server stopped: %v", ids)
	}
	if nets := networksOf(t, pid); len(nets) > 0 {
		t.Errorf("networks left after the server stopped: %v", nets)
	}
}

// TestDockerEgressNone: no network at all: no proxy, the provider's address, the proxy and DNS
// are all out of reach, and no proxy container is started.
func TestDockerEgressNone(t *testing.T) {
	w := newEgressWorld(t)
	e := newEnv(t, "--docker-image", mcpsession.FakeImage, "--docker-egress", "none")
	prov := w.provider + ":18080"
	rep, sc := probeNet(t, e, fmt.Sprintf("get=http://%s/&direct=http://%s/&addr=%s&host=%s", prov, prov, prov, w.provider))
	for _, k := range []string{"get", "direct", "tcp", "dns"} {
		if r := field(rep, k, "result"); r == "ok" {
			t.Errorf("%s succeeded without a network: %v", k, rep[k])
		}
	}
	if ws, _ := sc["warnings"].([]any); len(ws) > 0 {
		t.Errorf("got warnings %v, want none", ws)
	}
	if ids, _ := mcpsession.ContainersOf(e.sess.Cmd.Process.Pid); len(ids) > 0 {
		t.Errorf("egress none started containers that outlive the call: %v", ids)
	}
}

// TestDockerEgressOpenWarns: open is today's behaviour, asked for explicitly, and every result
// says so.
func TestDockerEgressOpenWarns(t *testing.T) {
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	e := newEnv(t, "--docker-image", mcpsession.FakeImage, "--docker-network", "none", "--docker-egress", "open")
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantDockerOK(t, sc)
	if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "--docker-egress open") {
		t.Errorf("got warnings %s, want the open network named", ws)
	}
}

// TestDockerEgressWatchdog: a server killed with SIGKILL leaves its proxy to its lifeline
// watchdog, which removes it (and any network).
func TestDockerEgressWatchdog(t *testing.T) {
	w := newEgressWorld(t)
	e := newEnv(t, "--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage,
		"--docker-network", w.network)
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantDockerOK(t, sc)
	pid := e.sess.Cmd.Process.Pid
	if ids, _ := mcpsession.ContainersOf(pid); len(ids) != 1 {
		t.Fatalf("got containers %v, want the egress proxy", ids)
	}
	if err := e.sess.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ids, _ := mcpsession.ContainersOf(pid)
		nets := networksOf(t, pid)
		if len(ids) == 0 && len(nets) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the server's SIGKILL: containers %v, networks %v left", ids, nets)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
