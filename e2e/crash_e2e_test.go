//go:build e2e && unix

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestServerKilledRemovesItsContainers: a server SIGKILLed during a Docker run leaves no
// container of that run behind within 15 s — its lifeline watchdog removes it — before any new
// server starts (a new server's sweep would hide the leak). The container is seen running first.
func TestServerKilledRemovesItsContainers(t *testing.T) {
	e := newDockerEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	pid := strconv.Itoa(e.sess.Cmd.Process.Pid)
	mine := func() []string {
		out, err := mcpsession.Containers("label=cline-mcp.instance")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, id := range out {
			if inst := containerLabel(t, id, "cline-mcp.instance"); strings.Contains(inst, "-"+pid+"-") {
				ids = append(ids, id)
			}
		}
		return ids
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, _ = e.sess.CallErr(ctx, "ask_cline_workspace", map[string]any{"prompt": "go fake:hang", "cwd": e.work, "isolation": "docker"}, nil)
	}()
	// One listing per poll: the first Docker call also creates (and removes) a short-lived mount
	// probe container of the same instance.
	if !mcpsession.Eventually(30*time.Second, func() bool { ids := mine(); return len(ids) == 1 && containerRunning(t, ids[0]) }) {
		t.Fatalf("no running container of server %s; the test would prove nothing", pid)
	}
	killed := time.Now()
	if err := e.sess.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	if !mcpsession.Eventually(15*time.Second, func() bool { return len(mine()) == 0 }) {
		t.Fatalf("container(s) %v of the killed server still exist 15 s later", mine())
	}
	t.Logf("the killed server's container was gone %v after its SIGKILL", time.Since(killed).Round(time.Millisecond))
}

func containerLabel(t *testing.T, id, key string) string {
	out, _ := mcpsession.Docker("inspect", "--format", `{{index .Config.Labels "`+key+`"}}`, id)
	return strings.TrimSpace(out)
}

func containerRunning(t *testing.T, id string) bool {
	out, _ := mcpsession.Docker("inspect", "--format", "{{.State.Running}}", id)
	return strings.TrimSpace(out) == "true"
}
