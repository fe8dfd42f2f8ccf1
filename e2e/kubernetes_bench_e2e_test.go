//go:build e2e && linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// envPodSessionBench turns TestKubernetesLaterTurns on: the number of later turns of each side.
const envPodSessionBench = "CLINE_MCP_POD_SESSION_BENCH"

// TestKubernetesLaterTurns times the later turns of a key-less conversation in a kept pod (each
// brought back from the pod and its sidecar's grant settled and re-armed) against those of a
// host session, alternating the two, the fake CLI on both sides. It reports medians and their
// ratio and asserts nothing about time
// (CLINE_MCP_POD_SESSION_BENCH=20 go test -tags e2e -run TestKubernetesLaterTurns -v ./e2e/).
func TestKubernetesLaterTurns(t *testing.T) {
	n, w, start := podBench(t)
	host, pod := start(false, nil), start(true, nil)
	h, p, first := laterTurns(t, n, host, pod)
	if k := w.pods(); k != 1 {
		t.Errorf("the session's turns left %d pods, want its one kept pod", k)
	}
	t.Logf("later turns, fake CLI, n=%d each, alternating: host p50 %v p95 %v; pod (key-less) p50 %v p95 %v (p50 %.2fx host); the pod's first turn %v",
		n, median(h), p95(h), median(p), p95(p), float64(median(p))/float64(median(h)), first)
}

// podBench is a pod benchmark's size (CLINE_MCP_POD_SESSION_BENCH; it skips without), its world
// and its servers (podBenchServer).
func podBench(t *testing.T) (int, k8sWorld, func(pod bool, extra []string) *env) {
	n, _ := strconv.Atoi(os.Getenv(envPodSessionBench))
	if n <= 0 {
		t.Skipf("set %s=<turns> (e.g. 20) to measure", envPodSessionBench)
	}
	w := newK8sWorld(t)
	return n, w, podBenchServer(t, w)
}

// podBenchServer starts servers of a key-less provider on w's cluster (pod) or the host, with
// extra flags.
func podBenchServer(t *testing.T, w k8sWorld) func(pod bool, extra []string) *env {
	ip, _ := k8sProvider(t, w)
	key := secretKey(t)
	return func(pod bool, extra []string) *env {
		e := prepareEnv(t)
		writeFile(t, e.providers, keylessProviders("openai-compatible", "http://"+ip+":18080/v1", key))
		if out, err := exec.Command("chmod", "-R", "a+rwX", e.root).CombinedOutput(); err != nil {
			t.Fatalf("chmod: %v %s", err, out)
		}
		args := []string{"--cline-protocol", "acp", "--sessions-dir", filepath.Join(e.root, "sessions"), "--warm-idle", "5m"}
		if pod {
			args = append(w.args(), args...)
		}
		e.startWithEnv([]string{"CLINE_MCP_K8S_PULL=Never"}, append(args, extra...)...)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("server %v %v log:\n%s", pod, extra, mcpsession.Tail(e.sess.Stderr(), 6000))
			}
		})
		return e
	}
}

// TestKubernetesFirstTurns times the first turns of new key-less conversations: on the host (a
// kept, initialized process), in a spare pod (--k8s-warm 1: a pod with the CLI initialized, and
// warmed up, before the call) and in a pod started for the call (no warm pods), in turn, 5 s
// apart so that a spare is ready. It reports medians and ratios and asserts nothing about time
// (CLINE_MCP_POD_SESSION_BENCH=<rounds>).
func TestKubernetesFirstTurns(t *testing.T) {
	n, _, start := podBench(t)
	// The pods of both pod servers fit on the node at once: a kept one and a spare, and one
	// per call of the server that keeps none.
	servers := []*env{start(false, nil), start(true, []string{"--k8s-cpu", "100m", "--warm-agents", "1", "--k8s-warm", "1"}),
		start(true, []string{"--k8s-cpu", "100m", "--warm-agents", "0"})}
	took := make([][]time.Duration, len(servers))
	for round := range n + 1 {
		for i, e := range servers {
			t0 := time.Now()
			_, sc := e.call("ask_cline", map[string]any{"prompt": "fake:pong"})
			d := time.Since(t0)
			if sc["ok"] != true {
				t.Fatalf("first turn: %v", sc)
			}
			if round > 0 { // the first round makes the host's process, the spares and the warm pool
				took[i] = append(took[i], d)
			}
		}
		time.Sleep(5 * time.Second)
	}
	h, s, c := took[0], took[1], took[2]
	t.Logf("first turns of new conversations, fake CLI, key-less, n=%d each: host p50 %v p95 %v; spare pod p50 %v p95 %v (p50 %.2fx host); a pod per conversation p50 %v p95 %v",
		n, median(h), p95(h), median(s), p95(s), float64(median(s))/float64(median(h)), median(c), p95(c))
}
