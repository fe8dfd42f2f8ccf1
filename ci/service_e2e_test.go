//go:build e2e

package ci

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestGateRealService: the gate against `cline-mcp serve --http` (Docker isolation, the fake
// CLI's image) on a checkout under the tenant's root: findings fail, a clean review passes, and
// a checkout outside the root or a wrong token is no-verdict.
func TestGateRealService(t *testing.T) {
	needTools(t)
	mcpsession.NeedDocker(t)
	b := binaries(t)
	if err := mcpsession.BuildFakeImage(b); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	token := "svc-e2e-token"
	sum := sha256.Sum256([]byte(token))
	tokens := filepath.Join(w.root, "tokens.json")
	file := fmt.Sprintf(`{"tenants": [{"name": "ci", "tokenSha256": [%q], "root": %q, "maxConcurrent": 1, "maxQueued": 1, "maxJobs": 0, "maxSpendUsdPerDay": 0}]}`,
		hex.EncodeToString(sum[:]), w.root)
	if err := os.WriteFile(tokens, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startService(t, w, b.ClineMCP, "--http-tokens", tokens, "--isolation", "docker",
		"--docker-image", mcpsession.FakeImage, "--docker-network", "none")
	vars := func(prompt string) map[string]string {
		return map[string]string{"GATE_SERVICE_URL": url, "GATE_SERVICE_TOKEN": token, "GATE_ARGS": "", "GATE_BINARY": "", "GATE_PROMPT": prompt}
	}
	r := runGate(t, w, vars(answer(blockHighLow)))
	r.want(t, w, "findings", "1", 1)
	validSARIF(t, r.out["sarif-file"], 2)

	r = runGate(t, w, vars(answer(blockNone)))
	r.want(t, w, "passed", "0", 0)

	outside := vars(answer(blockNone))
	outside["GATE_SERVICE_CWD"] = t.TempDir()
	r = runGate(t, w, outside)
	r.want(t, w, "no-verdict", "0", 2)
	if !strings.Contains(r.out["reason"], "did not run to an answer") {
		t.Errorf("reason %q", r.out["reason"])
	}

	wrong := vars(answer(blockNone))
	wrong["GATE_SERVICE_TOKEN"] = "not-the-token"
	r = runGate(t, w, wrong)
	r.want(t, w, "no-verdict", "0", 2)
	if !strings.Contains(r.out["reason"], "HTTP 401") {
		t.Errorf("reason %q", r.out["reason"])
	}
}

var serviceURLRe = regexp.MustCompile(`url=(http://127\.0\.0\.1:[0-9]+/mcp)`)

// startService starts `cline-mcp serve --http 127.0.0.1:0` over w and returns its /mcp URL
// (from its log); it is stopped with SIGTERM at the end of the test.
func startService(t *testing.T, w *world, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Dir, cmd.Env = w.work, w.env(nil)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if m := serviceURLRe.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Errorf("the service did not stop within 2 min of SIGTERM")
		}
	})
	select {
	case url := <-found:
		return url
	case <-time.After(2 * time.Minute):
		t.Fatal("the service logged no address in 2 min")
	}
	return ""
}
