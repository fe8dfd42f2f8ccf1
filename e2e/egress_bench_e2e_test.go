//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestEgressCost measures, only with CLINE_MCP_EGRESS_BENCH=<n> (n ≥ 15), what the egress proxy
// costs, with the fake CLI, in one run, alternating so the machine's load hits both sides alike:
//
//   - latency: n ask_cline calls in Docker with --docker-egress provider, n with none and n with
//     open on the test's bridge network (a network, no proxy), after one warm-up each (the
//     provider server's warm-up starts its proxy), timed at the MCP client; the p50s and ratios;
//   - throughput: a 50 MiB SSE stream from a fake provider on the test's network, read by the
//     fake CLI in its container through the proxy (provider) and directly (open on that
//     network), 5 times each; the medians in MiB/s and their ratio.
//
// It logs numbers and asserts only that every call succeeded and every stream arrived whole.
func TestEgressCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CLINE_MCP_EGRESS_BENCH"))
	if n < 15 {
		t.Skip("set CLINE_MCP_EGRESS_BENCH=<n ≥ 15> to measure the egress proxy's cost")
	}
	w := newEgressWorld(t)
	prov := w.provider + ":18080"
	provider := newEnv(t, "--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage,
		"--docker-network", w.network, "--egress-allow", prov)
	none := newEnvLike(t, provider, "--docker-image", mcpsession.FakeImage, "--docker-egress", "none")
	open := newEnvLike(t, provider, "--docker-image", mcpsession.FakeImage, "--docker-network", w.network, "--docker-egress", "open")

	call := func(e *env, prompt string) (map[string]any, time.Duration) {
		start := time.Now()
		sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": prompt})
		d := time.Since(start)
		wantDockerOK(t, sc)
		return sc, d
	}
	call(provider, "Reply with PONG")
	call(none, "Reply with PONG")
	call(open, "Reply with PONG")
	var pd, nd, od []time.Duration
	for range n {
		_, d := call(provider, "Reply with PONG")
		pd = append(pd, d)
		_, d = call(none, "Reply with PONG")
		nd = append(nd, d)
		_, d = call(open, "Reply with PONG")
		od = append(od, d)
	}
	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("latency per Docker call, n=%d each, alternated: provider p50 %v (min %v, max %v); none p50 %v (min %v, max %v); provider/none %.3f, +%v",
		n, p50(pd), slices.Min(pd), slices.Max(pd), p50(nd), slices.Min(nd), slices.Max(nd),
		float64(p50(pd))/float64(p50(nd)), p50(pd)-p50(nd))
	t.Logf("for comparison, open on the test's bridge network (a network, no proxy): p50 %v (min %v, max %v); provider/open %.3f",
		p50(od), slices.Min(od), slices.Max(od), float64(p50(pd))/float64(p50(od)))

	const mb = 50
	stream := func(e *env, how string) float64 {
		rep, sc := probeNet(t, e, fmt.Sprintf("%s=http://%s/stream?mb=%d&addr=127.0.0.1:1&host=localhost", how, prov, mb))
		if got, _ := rep[how].(map[string]any)["bytes"].(float64); field(rep, how, "status") != "200" || got != mb<<20 {
			t.Fatalf("%s stream: got %v (warnings %v), want 200 and %d bytes", how, rep[how], sc["warnings"], mb<<20)
		}
		secs, _ := rep[how].(map[string]any)["seconds"].(float64)
		return float64(mb) / secs
	}
	var viaProxy, direct []float64
	for range 5 {
		viaProxy = append(viaProxy, stream(provider, "get"))
		direct = append(direct, stream(open, "direct"))
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("throughput of a %d MiB SSE answer, 5 each, alternated: through the proxy median %.0f MiB/s (%v), direct %.0f MiB/s (%v); proxy/direct %.2f",
		mb, med(viaProxy), viaProxy, med(direct), direct, med(viaProxy)/med(direct))
}
