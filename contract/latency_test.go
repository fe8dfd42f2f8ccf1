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

// TestLatencyWarmAndSessions measures, with the real CLI against the fake provider and in the same
// rounds (one call of each in turn, so all see the same load): ask_cline on the host, in a new
// container and in a warm one (--docker-warm 2), with the JSON protocol (a CLI started per call) and
// with ACP (on the host a kept, initialized process: a warm host call); and a later turn of an ACP
// conversation on the host (a live process) and in Docker (a live container session). It logs p50
// and p95 and each one's ratio to the host call of its kind; it asserts nothing about time
// (CLINE_MCP_CONTRACT_BENCH=<rounds>, e.g. 20).
func TestLatencyWarmAndSessions(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envBench))
	if n <= 0 {
		t.Skipf("set %s=<rounds> (e.g. 20) to measure", envBench)
	}
	pong := fakeprovider.Script(fakeprovider.Text("PONG"))
	type series struct {
		name string
		w    *world
		sess string // a conversation's id: its later turns are measured
		base int    // the series its ratios are to
		took []time.Duration
	}
	warm := serverArgs("--docker-warm", "2")
	all := []*series{
		{name: "host, JSON", w: newWorld(t, pong, alone())},
		{name: "docker, new container, JSON", w: newWorld(t, pong, inDocker(), alone())},
		{name: "docker, warm, JSON", w: newWorld(t, pong, inDocker(), warm, alone())},
		{name: "host, ACP (kept process)", w: newWorld(t, pong, acpArgs(), alone()), base: 3},
		{name: "docker, warm, ACP", w: newWorld(t, pong, inDocker(), warm, acpArgs(), alone()), base: 3},
		{name: "docker, warm, ACP, key-less", w: newWorld(t, pong, throughEgressProxy(), warm, acpArgs(), alone()), base: 3},
		{name: "host ACP session, later turn", w: newWorld(t, pong, acpArgs(), alone()), sess: "?", base: 6},
		{name: "docker ACP session, later turn", w: newWorld(t, pong, inDocker(), acpArgs(), alone()), sess: "?", base: 6},
		{name: "docker ACP session, later, key-less", w: newWorld(t, pong, throughEgressProxy(), acpArgs(), alone()), sess: "?", base: 6},
	}
	measure := func(s *series) time.Duration {
		args := map[string]any{"prompt": "Reply with the word PONG"}
		if s.sess != "?" && s.sess != "" {
			args["sessionId"] = s.sess
		}
		start := time.Now()
		res, sc := s.w.call("ask_cline", args)
		d := time.Since(start)
		mcpsession.WantOK(t, res, sc)
		if s.sess == "?" {
			if s.sess = mcpsession.Str(sc, "sessionId"); s.sess == "" {
				t.Fatalf("%s: the first turn has no sessionId: %v", s.name, sc)
			}
		}
		return d
	}
	// Two rounds not counted: the first container and CLI starts pay for cold caches, and a warm
	// server's first call teaches its pool the calls' shape.
	for round := range n + 2 {
		for _, s := range all {
			d := measure(s)
			if round >= 2 {
				s.took = append(s.took, d)
			}
			time.Sleep(time.Second) // a server's work after a call stays out of the next call
		}
	}
	pct := func(ds []time.Duration, p float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(float64(len(s))*p))]
	}
	t.Logf("ask_cline PONG, real CLI %s, fake provider, n=%d each, interleaved, 1 s between calls:", clineVersion, n)
	for _, s := range all {
		base := all[s.base].took
		t.Logf("  %-32s p50 %7v  p95 %7v  (p50 %.2f×, p95 %.2f× the host's)", s.name, p50(s.took).Round(time.Millisecond),
			pct(s.took, 0.95).Round(time.Millisecond), float64(p50(s.took))/float64(p50(base)), float64(pct(s.took, 0.95))/float64(pct(base, 0.95)))
	}
}
