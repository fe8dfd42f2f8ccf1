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
// them. In copy mode (an engine that cannot see this machine's files) the same, the warm
// container's slot being a volume, which the watchdog removes too.
func TestDockerWarmServerKilled(t *testing.T) {
	t.Run("bind", func(t *testing.T) { warmServerKilled(t) })
	t.Run("copy", func(t *testing.T) { warmServerKilled(t, "--docker-mounts", "copy") })
}

func warmServerKilled(t *testing.T, args ...string) {
	e := newDockerEnv(t, append([]string{"--docker-warm", "1"}, args...)...)
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

	if ranIn := hostOfCall(t, e); !strings.HasPrefix(first, ranIn) {
		t.Fatalf("the second call ran in %q, not in the warm container %s", ranIn, first)
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

	volumes := func() string {
		out, err := mcpsession.Docker("volume", "ls", "-q", "--filter", "label=cline-mcp.instance")
		if err != nil {
			t.Fatal(err)
		}
		var mine []string
		for _, v := range strings.Fields(out) {
			if l, _ := mcpsession.Docker("volume", "inspect", "-f", `{{index .Labels "cline-mcp.instance"}}`, v); strings.Contains(l, "-"+pid+"-") {
				mine = append(mine, v)
			}
		}
		return strings.Join(mine, " ")
	}
	if len(args) > 0 && volumes() == "" {
		t.Fatal("copy mode: the server has no volumes before its SIGKILL; the test would prove nothing")
	}
	if err := e.sess.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	if !mcpsession.Eventually(15*time.Second, func() bool { return len(warm()) == 0 && len(slots()) == 0 && volumes() == "" }) {
		t.Fatalf("15 s after the server's SIGKILL: warm containers %v, slots %v, volumes %q left", warm(), slots(), volumes())
	}
}
