//go:build e2e && unix

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// envKeylessBench is the number of later turns TestKeylessLaterTurns times; unset skips it.
const envKeylessBench = "CLINE_MCP_KEYLESS_BENCH"

// TestKeylessLaterTurns times the later turns of a key-less Docker session (the provider key
// with the egress proxy, which settles the kept container's grant after every turn and re-arms
// it before the next) against those of a host session, alternating the two, the fake CLI on both
// sides. It reports medians and their ratio and asserts nothing about time
// (CLINE_MCP_KEYLESS_BENCH=20 go test -tags e2e -run TestKeylessLaterTurns -v ./e2e/).
func TestKeylessLaterTurns(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envKeylessBench))
	if n <= 0 {
		t.Skipf("set %s=<later turns> (e.g. 20) to measure", envKeylessBench)
	}
	w := newEgressWorld(t)
	key := secretKey(t)
	start := func(docker bool) *env {
		e := keylessEnv(t, w, key)
		args := []string{"--cline-protocol", "acp", "--sessions-dir", filepath.Join(t.TempDir(), "sessions"), "--warm-idle", "5m"}
		if docker {
			args = append(args, "--isolation", "docker", "--docker-image", mcpsession.FakeImage,
				"--docker-egress-image", mcpsession.EgressImage, "--docker-network", w.network)
		}
		e.startWithEnv(nil, args...)
		return e
	}
	host, dock := start(false), start(true)
	h, d, _ := laterTurns(t, n, host, dock)
	if runs := serverRuns(t, dock.sess.Cmd.Process.Pid); len(runs) != 1 {
		t.Errorf("the key-less session's turns ran in %d containers, want its one kept container", len(runs))
	}
	t.Logf("later turns, fake CLI, n=%d each, alternating: host p50 %v p95 %v; Docker key-less p50 %v p95 %v (p50 %.2fx host)",
		n, median(h), p95(h), median(d), p95(d), float64(median(d))/float64(median(h)))
}

// laterTurns times n later turns of a host session and of a key-less container session (its
// first turn must say credentialOutside, or the benchmark would measure something else),
// alternating, 300 ms apart, the fake CLI's pong on both; it returns both samples and the
// container session's first turn.
func laterTurns(t *testing.T, n int, host, box *env) (h, b []time.Duration, first time.Duration) {
	t.Helper()
	sessions := map[*env]string{}
	turn := func(e *env) (time.Duration, map[string]any) {
		args := map[string]any{"prompt": "fake:pong"}
		if id := sessions[e]; id != "" {
			args["sessionId"] = id
		}
		t0 := time.Now()
		_, sc := e.call("ask_cline", args)
		d := time.Since(t0)
		if sc["ok"] != true {
			t.Fatalf("turn: %v", sc)
		}
		sessions[e], _ = sc["sessionId"].(string)
		return d, sc
	}
	turn(host)
	first, sc := turn(box)
	if enf, _ := enforcementOf(t, sc); enf["credentialOutside"] != true {
		t.Fatalf("the container session is not key-less, the benchmark would measure something else: %v", enf)
	}
	for range n {
		dh, _ := turn(host)
		db, _ := turn(box)
		h, b = append(h, dh), append(b, db)
		time.Sleep(300 * time.Millisecond)
	}
	return h, b, first
}

// median and p95 are the 50th and 95th percentiles of x (sorted in place).
func median(x []time.Duration) time.Duration { slices.Sort(x); return x[len(x)/2] }

func p95(x []time.Duration) time.Duration { slices.Sort(x); return x[len(x)*95/100] }
