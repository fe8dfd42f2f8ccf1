//go:build e2e && linux

package deploy

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// serviceImage is the service's own image as `make image-service` builds it (deploy/image).
const serviceImage = "cline-mcp/cline-mcp:e2e"

// buildServiceImage runs `make image-service`: the binary of this tree on the base images/base.sh
// picks (a registry's debian:bookworm-slim, or the same release from Debian packages).
func buildServiceImage(t *testing.T) {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "image-service", "SERVICE_IMAGE="+serviceImage, "ENGINE_ARCH="+mcpsession.EngineArch())
	cmd.Dir = ".."
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image-service: %v\n%s", err, out)
	}
}

// TestServiceImage: the image the Deployment names runs, as the Deployment runs it (uid 1000,
// read-only root file system), the current tree's cline-mcp at /usr/local/bin/cline-mcp and git,
// which the service needs for repositories named by URL or sent as a bundle.
func TestServiceImage(t *testing.T) {
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", err)
	}
	buildServiceImage(t)
	run := func(entry string, args ...string) string {
		t.Helper()
		argv := append([]string{"run", "--rm", "--read-only", "--user", "1000:1000", "--network", "none", "--entrypoint", entry, serviceImage}, args...)
		out, err := exec.Command("docker", argv...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v\n%s", argv, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := run("/usr/local/bin/cline-mcp", "version"); !strings.HasPrefix(out, "cline-mcp ") || !strings.Contains(out, "linux/") {
		t.Errorf("cline-mcp version in the image: %q", out)
	}
	if out := run("git", "--version"); !strings.HasPrefix(out, "git version ") {
		t.Errorf("git in the image: %q", out)
	}
	user, err := exec.Command("docker", "image", "inspect", "--format", "{{.Config.User}}", serviceImage).Output()
	if err != nil || strings.TrimSpace(string(user)) != "1000:1000" {
		t.Errorf("the image's user: %q %v, want 1000:1000 (the Deployment's)", user, err)
	}
}
