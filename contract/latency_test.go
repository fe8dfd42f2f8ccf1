//go:build contract && linux

package contract

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// envBench is the number of calls per isolation TestLatencyDockerVsHost makes; unset skips it.
const envBench = "CLINE_MCP_CONTRACT_BENCH"

// TestLatencyDockerVsHost measures one ask_cline call with the real CLI against the fake
// provider, on the host and in the real image, alternating the two so both see the same load.
// It reports medians and their ratio; it asserts nothing about time (run it with
// CLINE_MCP_CONTRACT_BENCH=10 make contract, or with -run and the variable set).
func TestLatencyDockerVsHost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envBench))
	if n <= 0 {
		t.Skipf("set %s=<calls per isolation> (e.g. 10) to measure", envBench)
	}
	hostW := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), alone())
	dockerW := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), inDocker(), alone())
	measure := func(w *world) time.Duration {
		start := time.Now()
		res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG"})
		d := time.Since(start)
		mcpsession.WantOK(t, res, sc)
		return d
	}
	// One warm-up each: the first container start and the first CLI start pay for cold caches.
	measure(hostW)
	measure(dockerW)
	var host, dock []time.Duration
	for range n {
		host = append(host, measure(hostW))
		dock = append(dock, measure(dockerW))
	}
	hp, dp := p50(host), p50(dock)
	t.Logf("ask_cline PONG, real CLI 3.0.65, fake provider, n=%d per isolation (after one warm-up each):", n)
	t.Logf("  host   p50 %v  min %v  max %v", hp.Round(time.Millisecond), slices.Min(host).Round(time.Millisecond), slices.Max(host).Round(time.Millisecond))
	t.Logf("  docker p50 %v  min %v  max %v", dp.Round(time.Millisecond), slices.Min(dock).Round(time.Millisecond), slices.Max(dock).Round(time.Millisecond))
	t.Logf("  docker/host p50 ratio %.2f (+%v per call)", float64(dp)/float64(hp), (dp - hp).Round(time.Millisecond))
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
