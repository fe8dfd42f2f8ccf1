//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// needTool fails under CI=true and skips loudly elsewhere when a program is missing.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s is not installed: %v", name, err)
		}
		t.Skipf("!!! SKIPPED: %s is not installed: %v", name, err)
	}
	return p
}

// TestComposeSmoke runs compose/smoke.sh: the static binaries are built on the host into the
// runner's build context, then `docker-compose up --build --abort-on-container-exit
// --exit-code-from smoke` runs the MCP smoke session inside the runner container.
func TestComposeSmoke(t *testing.T) {
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	needTool(t, "docker-compose")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	project := "cline-mcp-e2e-" + suiteTag
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "compose", "smoke.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "COMPOSE_PROJECT_NAME="+project)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err = cmd.Run()
	t.Logf("compose smoke took %v", time.Since(t0).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("compose/smoke.sh: %v\n%s", err, mcpsession.Tail(out.String(), 8000))
	}
	for _, want := range []string{"smoke: PASS", "exited with code 0", "transient retried: ok"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("smoke output lacks %q:\n%s", want, mcpsession.Tail(out.String(), 8000))
		}
	}
	if ids, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project).Output(); len(bytes.TrimSpace(ids)) > 0 {
		t.Errorf("compose left containers: %s", ids)
	}
}

// TestFakeImageAsContainer runs the fake CLI image directly with testcontainers-go, the way a
// user's own suite can use it without cline-mcp: scenario by prompt directive and by
// FAKE_CLINE_SCENARIO, a tmpfs HOME, a read-only root.
func TestFakeImageAsContainer(t *testing.T) {
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	cases := []struct {
		name     string
		env      map[string]string
		prompt   string
		wantLine string
		wantCode int
	}{
		{"directive pong", nil, "Reply fake:pong?text=HELLO-E2E", `"finishReason":"completed"`, 0},
		{"env scenario 401", map[string]string{"FAKE_CLINE_SCENARIO": "http_401"}, "hello there", `"errorClass"`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
				ContainerRequest: testcontainers.ContainerRequest{
					Image:      fakeImage,
					Cmd:        []string{"--json", "-c", "/", c.prompt},
					Env:        c.env,
					Tmpfs:      map[string]string{"/home/cline": "rw,mode=1777"},
					Labels:     map[string]string{"cline-mcp.e2e": suiteTag},
					WaitingFor: wait.ForExit().WithExitTimeout(time.Minute),
					HostConfigModifier: func(hc *container.HostConfig) {
						hc.ReadonlyRootfs = true
						hc.CapDrop = []string{"ALL"}
					},
				},
				Started: true,
			})
			testcontainers.CleanupContainer(t, ctr)
			if err != nil {
				t.Fatal(err)
			}
			st, err := ctr.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := ctr.Logs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			logs, _ := io.ReadAll(rc)
			rc.Close()
			if st.ExitCode != c.wantCode {
				t.Errorf("got exit code %d, want %d\n%s", st.ExitCode, c.wantCode, logs)
			}
			if !bytes.Contains(logs, []byte(c.wantLine)) {
				t.Errorf("output lacks %s:\n%s", c.wantLine, mcpsession.Tail(string(logs), 3000))
			}
			if c.name == "directive pong" && !bytes.Contains(logs, []byte("HELLO-E2E")) {
				t.Errorf("the prompt directive was not honoured:\n%s", mcpsession.Tail(string(logs), 3000))
			}
		})
	}
}
