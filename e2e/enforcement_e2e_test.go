//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// enforcementOf is a result's enforcement member, failing the test when it is missing.
func enforcementOf(t *testing.T, sc map[string]any) (enf, container map[string]any) {
	t.Helper()
	enf, _ = sc["enforcement"].(map[string]any)
	if enf == nil {
		t.Fatalf("the result has no enforcement: %v", sc)
	}
	container, _ = enf["container"].(map[string]any)
	return enf, container
}

// mountAt is the container's mount with this target, nil when there is none.
func mountAt(c map[string]any, target string) map[string]any {
	ms, _ := c["mounts"].([]any)
	for _, m := range ms {
		if mm, _ := m.(map[string]any); mm["target"] == target {
			return mm
		}
	}
	return nil
}

// TestEnforcementReport: every result says what was enforced for it, from what the engine was
// asked: for a Docker run the image and its CLI, the user, the read-only root, the dropped
// capabilities, no-new-privileges, the network, the mounts (cwd read-only for the analysis tool,
// writable for apply), the endpoints the egress proxy allowed and those it refused; the text has
// one "Enforced:" line. A host run says host and has no container; a Docker call whose container
// never started says so too. Each claim is checked against the engine's own record of the
// container (docker inspect of the run while it runs is not possible after the removal, so the
// probe inside the run checks the root and the cwd).
func TestEnforcementReport(t *testing.T) {
	w := newEgressWorld(t)
	prov := w.provider + ":18080"
	e := newEnv(t, "--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage,
		"--docker-network", w.network, "--egress-allow", prov)

	_, sc := probeNet(t, e, "connect=blocked.invalid:443")
	enf, c := enforcementOf(t, sc)
	if enf["isolation"] != "docker" || enf["egress"] != "provider" || c == nil {
		t.Fatalf("enforcement %v, want a docker container in provider egress", enf)
	}
	for k, want := range map[string]string{"engine": "docker", "image": mcpsession.FakeImage, "cli": "fake",
		"readOnlyRoot": "true", "noNewPrivileges": "true", "privileged": "false", "network": "none", "capDrop": "[ALL]"} {
		if got := fmt.Sprint(c[k]); got != want {
			t.Errorf("enforcement.container.%s = %s, want %s", k, got, want)
		}
	}
	if id := fmt.Sprint(c["imageId"]); !strings.HasPrefix(id, "sha256:") {
		t.Errorf("imageId %q, want the engine's id", id)
	}
	// The container runs as the caller (files it writes into the checkout stay the caller's).
	if u, want := fmt.Sprint(c["user"]), fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()); u != want {
		t.Errorf("user %q, want the caller's %s", u, want)
	}
	if m := mountAt(c, e.work); m == nil || m["readOnly"] != true {
		t.Errorf("the cwd's mount of ask_cline: %v, want read-only (mounts %v)", m, c["mounts"])
	}
	if got := fmt.Sprint(enf["allowedEndpoints"]); !strings.Contains(got, prov) {
		t.Errorf("allowedEndpoints %s, want %s", got, prov)
	}
	if got, _ := enf["refusedEndpoints"].([]any); !slices.Contains(got, any("blocked.invalid:443")) {
		t.Errorf("refusedEndpoints %v, want blocked.invalid:443", got)
	}
	if enf["credentialOutside"] != false {
		t.Errorf("credentialOutside %v: the container still gets its provider's key", enf["credentialOutside"])
	}

	// apply_cline_edits: the checkout is writable, and the text carries the summary line.
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	args := map[string]any{"prompt": "Edit fake:edit_many?modify=README.md", "isolation": "docker"}
	res, sc := e.call("apply_cline_edits", args)
	wantDockerOK(t, sc)
	var blocks []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			blocks = append(blocks, tc.Text)
		}
	}
	enf, c = enforcementOf(t, sc)
	if m := mountAt(c, e.work); m == nil || m["readOnly"] != false {
		t.Errorf("the checkout's mount of apply_cline_edits: %v, want writable (mounts %v)", m, c["mounts"])
	}
	// The answer stays the first block; the Enforced line is a block of its own.
	if len(blocks) != 2 || blocks[1] != "Enforced: "+fmt.Sprint(enf["summary"]) || !strings.Contains(blocks[1], "read-only root") ||
		strings.Contains(blocks[0], "Enforced:") {
		t.Errorf("text blocks %q, want the answer then the Enforced line with the summary %q", blocks, enf["summary"])
	}

	// host: said so, no container, no line in the answer.
	res, sc = e.call("ask_cline", map[string]any{"prompt": "Reply with PONG"})
	enf, c = enforcementOf(t, sc)
	if enf["isolation"] != "host" || c != nil {
		t.Errorf("host enforcement %v", enf)
	}
	if len(res.Content) != 1 || strings.Contains(mcpsession.Text(res), "Enforced:") {
		t.Errorf("a host answer carries an Enforced line: %v", res.Content)
	}
}

// TestEnforcementWithoutContainer: a Docker call whose image is missing fails before any
// container exists, and its result says that nothing was created.
func TestEnforcementWithoutContainer(t *testing.T) {
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	e := newEnv(t, "--docker-image", "cline-mcp/no-such-image:never", "--docker-egress", "none")
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Reply with PONG", "isolation": "docker"})
	mcpsession.WantKind(t, res, sc, "launch_failed")
	enf, c := enforcementOf(t, sc)
	if enf["isolation"] != "docker" || c != nil || !strings.Contains(fmt.Sprint(enf["summary"]), "no container") {
		t.Errorf("enforcement %v, want docker without a container", enf)
	}
}
