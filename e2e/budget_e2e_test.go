//go:build e2e

package e2e

import (
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestSpendLimitsDocker: the spend limits stop a run in a container too (the usage events come
// through the container's stdout), and the container is gone afterwards.
func TestSpendLimitsDocker(t *testing.T) {
	e := newDockerEnv(t)
	loop := "Go fake:tool_loop?cost_per_call=0.01&delay_ms=600&max_iterations=30"
	sc, text, _ := budgetCall(t, e, "tok-docker-cost", map[string]any{"prompt": loop, "maxCostUsd": 0.025, "isolation": "docker"})
	wantBudgetExceeded(t, sc, text, "spent $0.0300", "maxCostUsd $0.0250")
	if sc["isolation"] != "docker" {
		t.Errorf("isolation %v", sc["isolation"])
	}
	sc, text, _ = budgetCall(t, e, "tok-docker-iter", map[string]any{"prompt": loop, "maxIterations": 2, "isolation": "docker"})
	wantBudgetExceeded(t, sc, text, "iteration 3", "maxIterations 2")
	if ids, _ := mcpsession.ContainersOf(e.sess.Cmd.Process.Pid); len(ids) > 0 {
		t.Errorf("containers left after the stopped runs: %v", ids)
	}
}
