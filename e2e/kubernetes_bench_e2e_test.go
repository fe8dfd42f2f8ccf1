//go:build e2e && linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// envPodSessionBench turns TestKubernetesLaterTurns on: the number of later turns of each side.
const envPodSessionBench = "CLINE_MCP_POD_SESSION_BENCH"

// TestKubernetesLaterTurns times the later turns of a key-less conversation in a kept pod (each
// brought back from the pod and its sidecar's grant settled and re-armed) against those of a
// host session, alternating the two, the fake CLI on both sides. It reports medians and their
// ratio and asserts nothing about time
// (CLINE_MCP_POD_SESSION_BENCH=20 go test -tags e2e -run TestKubernetesLaterTurns -v ./e2e/).
func TestKubernetesLaterTurns(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envPodSessionBench))
	if n <= 0 {
		t.Skipf("set %s=<later turns> (e.g. 20) to measure", envPodSessionBench)
	}
	w := newK8sWorld(t)
	ip, _ := k8sProvider(t, w)
	key := secretKey(t)
	start := func(pod bool) *env {
		e := prepareEnv(t)
		writeFile(t, e.providers, keylessProviders("openai-compatible", "http://"+ip+":18080/v1", key))
		if out, err := exec.Command("chmod", "-R", "a+rwX", e.root).CombinedOutput(); err != nil {
			t.Fatalf("chmod: %v %s", err, out)
		}
		args := []string{"--cline-protocol", "acp", "--sessions-dir", filepath.Join(e.root, "sessions"), "--warm-idle", "5m"}
		if pod {
			args = append(w.args(), args...)
		}
		e.startWithEnv([]string{"CLINE_MCP_K8S_PULL=Never"}, args...)
		return e
	}
	host, pod := start(false), start(true)
	h, p, first := laterTurns(t, n, host, pod)
	if k := w.pods(); k != 1 {
		t.Errorf("the session's turns left %d pods, want its one kept pod", k)
	}
	t.Logf("later turns, fake CLI, n=%d each, alternating: host p50 %v p95 %v; pod (key-less) p50 %v p95 %v (p50 %.2fx host); the pod's first turn %v",
		n, median(h), p95(h), median(p), p95(p), float64(median(p))/float64(median(h)), first)
}
