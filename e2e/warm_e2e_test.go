//go:build e2e && unix

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestDockerWarmServerKilled: with --docker-warm 1 the server keeps a started container ready
// after its first Docker call; the next call runs in it (it is gone afterwards and another is
// ready), its settings copy merged back as for any container call. SIGKILLed with a warm
// container and its slot ready, the server leaves both to its lifeline watchdog, which removes
// them.
func TestDockerWarmServerKilled(t *testing.T) {
	e := newDockerEnv(t, "--docker-warm", "1")
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	pid := strconv.Itoa(e.sess.Cmd.Process.Pid)
	warm := func() []string {
		ids, err := mcpsession.Containers("label=cline-mcp.role=warm")
		if err != nil {
			t.Fatal(err)
		}
		var mine []string
		for _, id := range ids {
			if strings.Contains(containerLabel(t, id, "cline-mcp.instance"), "-"+pid+"-") {
				mine = append(mine, id)
			}
		}
		return mine
	}
	slots := func() []string {
		m, _ := filepath.Glob(filepath.Join(e.root, "tmp", "cline-mcp-warm-*"))
		return m
	}
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantDockerOK(t, sc)
	if !mcpsession.Eventually(30*time.Second, func() bool { return len(warm()) == 1 && containerRunning(t, warm()[0]) }) {
		t.Fatalf("no warm container after the first call: %v", warm())
	}
	first := warm()[0]

	sc, _ = dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantDockerOK(t, sc)
	if sc["text"] != "PONG" {
		t.Fatalf("warm call answered %v", sc["text"])
	}
	if !mcpsession.Eventually(30*time.Second, func() bool { ids := warm(); return len(ids) == 1 && ids[0] != first }) {
		t.Fatalf("the warm container %s was not used and replaced: %v", first, warm())
	}
	if out, _ := mcpsession.Docker("inspect", first); strings.Contains(out, first) {
		t.Fatalf("the used warm container %s still exists", first)
	}
	if got, _ := os.ReadFile(e.providers); string(got) != providersBefore {
		t.Errorf("providers.json changed by a warm call: %s", got)
	}
	if s := slots(); len(s) != 1 {
		t.Fatalf("slots %v, want the ready container's one", s)
	}

	if err := e.sess.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	if !mcpsession.Eventually(15*time.Second, func() bool { return len(warm()) == 0 && len(slots()) == 0 }) {
		t.Fatalf("15 s after the server's SIGKILL: warm containers %v, slots %v left", warm(), slots())
	}
}
