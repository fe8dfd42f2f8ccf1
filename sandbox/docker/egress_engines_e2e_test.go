//go:build e2e

package docker

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/testengine"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// TestProviderEgressEngines: the provider-mode mechanism (network none, the proxy's volume
// read-only, the forwarder on the run's loopback, the unix socket) on this Docker engine and on
// a private Podman: a run reaches the proxy (an allowed target is dialled, another refused and
// reported), has no interface but loopback and no route (the engine's gateway), cannot write
// the proxy's volume, and the forwarder keeps the executor's semantics (exit code, a signal's
// 128+n, a stop that reaches the CLI).
func TestProviderEgressEngines(t *testing.T) {
	requireEngine(t)
	if err := mcpsession.BuildEgressImage(); err != nil {
		t.Fatal(err)
	}
	t.Run("docker", func(t *testing.T) {
		testProviderEgress(t, testEndpoint(t), "bridge")
	})
	t.Run("podman", func(t *testing.T) {
		eng := privateEngine(t, testengine.StartPodman)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		if err := eng.LoadImage(ctx, mcpsession.EgressImage); err != nil {
			t.Fatal(err)
		}
		testProviderEgress(t, engine.Endpoint{Host: eng.Host, Source: "test"}, "podman")
	})
}

func testProviderEgress(t *testing.T, ep engine.Endpoint, network string) {
	e := newTestExecutor(t, WithEndpoint(ep), WithNetwork(network), WithInstanceID("egress-"+strings.ReplaceAll(t.Name(), "/", "-")),
		WithEgress(Egress{Mode: EgressProvider, Image: mcpsession.EgressImage, Allow: []string{"192.0.2.10:443"}}))
	run := func(ctx context.Context, args ...string) (sandbox.Exit, string) {
		t.Helper()
		var out bytes.Buffer
		x, err := e.Run(ctx, sandbox.Spec{Path: probePath, Args: args, Stdout: &out, Stderr: &out, User: "1000:1000",
			Tmpfs: []sandbox.Tmpfs{{Target: "/tmp"}}, StopGrace: 5 * time.Second})
		if err != nil {
			t.Fatalf("run %v: %v\n%s", args, err, out.String())
		}
		return x, out.String()
	}
	x, out := run(t.Context(), "ifaces", "connect", "172.17.0.1:22", "connect", "10.88.0.1:22",
		"proxy", "192.0.2.10:443", "proxy", "blocked.invalid:443", "write", "/opt/cline-mcp-egress/x", "pwned", "exit", "3")
	t.Logf("%s", out)
	if x.Code != 3 || x.Signal != "" {
		t.Errorf("exit %+v, want code 3 through the forwarder", x)
	}
	if !strings.Contains(out, "ifaces [127.0.0.1/8] ") && !strings.Contains(out, "ifaces [127.0.0.1/8 ::1/128] ") {
		t.Error("the run's container has interfaces besides loopback")
	}
	for _, want := range []string{"proxy 192.0.2.10:443 HTTP/1.1 502", "proxy blocked.invalid:443 HTTP/1.1 403", "write /opt/cline-mcp-egress/x error"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "connect ok") {
		t.Error("a direct connection succeeded")
	}
	if x.Egress == nil || len(x.Egress.Refused) != 1 || x.Egress.Refused[0].Target != "blocked.invalid:443" ||
		len(x.Egress.Allowed) != 1 || x.Egress.Allowed[0].Target != "192.0.2.10:443" {
		t.Errorf("egress report %+v, want blocked.invalid refused and 192.0.2.10 reached as a non-provider endpoint", x.Egress)
	}
	if x, _ := run(t.Context(), "kill-self", "15"); x.Code != 128+15 || x.Signal != "SIGTERM" {
		t.Errorf("a run killed by SIGTERM: %+v, want 143 SIGTERM", x)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(3 * time.Second); cancel() }()
	if x, out := run(ctx, "exit-on-int", "7", "sleep", "60s"); !x.Stopped || x.Code != 7 {
		t.Errorf("a stopped run: %+v %s, want Stopped and the CLI's own exit 7 after SIGINT", x, out)
	}
}
