//go:build e2e

package ci

import (
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestGateDocker: the gate's default, a review in a Docker container (the fake CLI's image),
// gives the same verdicts as on the host: findings fail, and a container whose CLI cannot
// start is no-verdict.
func TestGateDocker(t *testing.T) {
	needTools(t)
	mcpsession.NeedDocker(t)
	b := binaries(t)
	if err := mcpsession.BuildFakeImage(b); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	args := strings.Join([]string{"--docker-image", mcpsession.FakeImage, "--docker-network", "none", "--stop-grace", "500ms"}, "\n")
	r := runGate(t, w, map[string]string{"GATE_ISOLATION": "", "GATE_ARGS": args, "GATE_PROMPT": answer(blockHighLow)})
	r.want(t, w, "findings", "1", 1)
	if !strings.Contains(r.stderr, "starting Cline (docker)") {
		t.Errorf("the review did not run in Docker:\n%s", r.stderr)
	}
	validSARIF(t, r.out["sarif-file"], 2)

	r = runGate(t, w, map[string]string{"GATE_ISOLATION": "", "GATE_ARGS": args + "\n--docker-cline\n/no/such/cline", "GATE_PROMPT": answer(blockNone)})
	r.want(t, w, "no-verdict", "0", 2)
	if !strings.Contains(r.stderr, "launch_failed") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
