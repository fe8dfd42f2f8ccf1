//go:build e2e && unix

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// plantSettings is a turn that leaves a file in its container's /tmp and in its settings copy
// (mounted writable at the data dir's settings/) and records its container; probeSettings one
// that reports, into its session's data dir, its container and whether it sees either file.
const (
	plantSettings = "fake:run_commands?cmd=echo%20planted%20%3E%20/tmp/planted&cmd=echo%20evil%20%3E%20$CLINE_DATA_DIR/settings/planted-setting&cmd=read%20h%20%3C%20/etc/hostname%3B%20echo%20$h%20%3E%20$CLINE_DATA_DIR/host1"
	probeSettings = "fake:run_commands?cmd=read%20h%20%3C%20/etc/hostname%3B%20echo%20$h%20%3E%20$CLINE_DATA_DIR/host2&cmd=read%20x%20%3C%20/tmp/planted%20%26%26%20echo%20$x%20%3E%20$CLINE_DATA_DIR/seen&cmd=read%20y%20%3C%20$CLINE_DATA_DIR/settings/planted-setting%20%26%26%20echo%20$y%20%3E%20$CLINE_DATA_DIR/leak"
)

// TestSpareAgent: with warm containers, the first turn of a Docker conversation leaves a spare
// behind — a new container with the CLI started and initialized — and the next conversation's
// first turn runs in it: in a container that existed before the call, that is not the first
// session's, and that has nothing the first turn planted in its container or in its settings copy
// (a spare's settings copy is what the host wrote before the first turn ran). The spare becomes
// the new session's container (its later turn runs there); its replacement is another new
// container; when the idle time ends, every container, settings copy and unclaimed spare's data
// dir is gone.
func TestSpareAgent(t *testing.T) {
	sessions := filepath.Join(t.TempDir(), "sessions")
	w := newWorld(t, docker, worldOpts{args: []string{"--cline-protocol", "acp", "--sessions-dir", sessions,
		"--docker-warm", "1", "--warm-idle", "8s", "--warm-agents", "3"}})
	mine := func() []string { return serverContainers(t, w.sess.Cmd.Process.Pid) }
	dataOf := func(id string) string { return sessionData(t, sessions, id) }
	of := func(ids []string, host string) string {
		for _, id := range ids {
			if host != "" && strings.HasPrefix(id, host) {
				return id
			}
		}
		return ""
	}
	gitInit(t, w.work, map[string]string{"README.md": "x\n"})

	_, first := w.call("ask_cline", map[string]any{"prompt": "plant " + plantSettings})
	wantOK(t, first)
	host1 := readTrimmed(filepath.Join(dataOf(first["sessionId"].(string)), "host1"))
	if planted, _ := filepath.Glob(filepath.Join(w.tmp, "cline-mcp-agent-*", "cline-mcp-data-*", "settings", "planted-setting")); host1 == "" || len(planted) != 1 {
		t.Fatalf("turn 1 did not plant its files (host %q, settings %v): the test would prove nothing", host1, planted)
	}
	// The spare: a second container besides the first session's, started after turn 1.
	var before []string
	if !mcpsession.Eventually(60*time.Second, func() bool {
		before = mine()
		return len(before) == 2 && of(before, host1) != ""
	}) {
		t.Fatalf("no spare after the first turn: containers %v (the session's is %s)", before, host1)
	}
	time.Sleep(2 * time.Second) // its CLI initializes (milliseconds for the fake CLI)

	called := time.Now()
	_, second := w.call("ask_cline", map[string]any{"prompt": probeSettings})
	wantOK(t, second)
	id2 := second["sessionId"].(string)
	// The spare opened the call's session before the call (a session id starts with the
	// millisecond it was opened): the call sent only its prompt.
	if ms, err := strconv.ParseInt(strings.SplitN(id2, "_", 2)[0], 10, 64); err != nil || ms >= called.UnixMilli() {
		t.Errorf("the second conversation's session %s was not opened before its call (%d): %v", id2, called.UnixMilli(), err)
	}
	data2 := dataOf(id2)
	host2 := readTrimmed(filepath.Join(data2, "host2"))
	spare := of(before, host2)
	if spare == "" || strings.HasPrefix(spare, host1) {
		t.Fatalf("the second conversation ran in container %q, not in the spare of %v (the first session's: %q)", host2, before, host1)
	}
	for _, f := range []string{"seen", "leak"} {
		if _, err := os.Stat(filepath.Join(data2, f)); !os.IsNotExist(err) {
			t.Errorf("the spare has %s of what the first turn planted: %v", f, err)
		}
	}
	// Its replacement is a new container; the spare is the second session's now.
	var after []string
	if !mcpsession.Eventually(60*time.Second, func() bool { after = mine(); return len(after) == 3 }) {
		t.Fatalf("containers after the second turn: %v, want the two sessions' and a new spare", after)
	}
	if !slices.Contains(after, spare) || !slices.Contains(after, of(before, host1)) {
		t.Errorf("containers after the second turn %v lack a session's (%s, %s)", after, host1, spare)
	}
	_, later := w.call("ask_cline", map[string]any{"prompt": probeSettings, "sessionId": id2})
	wantOK(t, later)
	if got := readTrimmed(filepath.Join(data2, "host2")); got != host2 {
		t.Errorf("the second session's later turn ran in %q, not in its container %q", got, host2)
	}

	// The idle time ends them all: no container, no settings copy, no unclaimed data dir.
	if !mcpsession.Eventually(60*time.Second, func() bool { return len(mine()) == 0 }) {
		t.Fatalf("the idle containers %v are still there", mine())
	}
	if !mcpsession.Eventually(10*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(w.tmp, "cline-mcp-agent-*"))
		d, _ := filepath.Glob(filepath.Join(sessions, "data", "*"))
		return len(m) == 0 && len(d) == 2
	}) {
		m, _ := filepath.Glob(filepath.Join(w.tmp, "cline-mcp-agent-*"))
		d, _ := filepath.Glob(filepath.Join(sessions, "data", "*"))
		t.Errorf("after the idle end: settings dirs %v, data dirs %v (want none, and the two sessions')", m, d)
	}
}

// TestSpareAgentKilledServer: a server SIGKILLed while a spare waits leaves nothing behind: its
// lifeline watchdog removes the spare's container, its settings copy and its data dir.
func TestSpareAgentKilledServer(t *testing.T) {
	sessions := filepath.Join(t.TempDir(), "sessions")
	e := newDockerEnv(t, "--cline-protocol", "acp", "--sessions-dir", sessions, "--docker-warm", "1", "--warm-idle", "10m")
	mine := func() []string { return serverContainers(t, e.sess.Cmd.Process.Pid) }
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "fake:pong"})
	wantDockerOK(t, sc)
	if !mcpsession.Eventually(60*time.Second, func() bool { return len(mine()) == 2 }) {
		t.Fatalf("no spare besides the session's container (%v): the test would prove nothing", mine())
	}
	data, _ := filepath.Glob(filepath.Join(sessions, "data", "*"))
	if len(data) != 2 {
		t.Fatalf("data dirs %v: want the session's and the spare's", data)
	}
	if err := e.sess.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(mine()) == 0 }) {
		t.Fatalf("the killed server's containers %v still exist", mine())
	}
	if !mcpsession.Eventually(10*time.Second, func() bool {
		d, _ := filepath.Glob(filepath.Join(sessions, "data", "*"))
		return len(d) == 1
	}) {
		d, _ := filepath.Glob(filepath.Join(sessions, "data", "*"))
		t.Errorf("data dirs after the watchdog: %v, want the recorded session's alone", d)
	}
}

// TestSpareAgentKeyless: a key-less conversation (the key with the egress proxy) gets spares too,
// and they hold no key: the second conversation's first turn runs in the spare (its container's
// host name is the spare's, not the first session's), reaches the provider through the proxy with
// the real key while its container has only a placeholder (the key search finds nothing), and
// the spare is then that conversation's kept container, with a new spare beside it.
func TestSpareAgentKeyless(t *testing.T) {
	w := newEgressWorld(t)
	key := secretKey(t)
	e := keylessEnv(t, w, key)
	e.startWithEnv(nil, "--cline-protocol", "acp", "--sessions-dir", filepath.Join(t.TempDir(), "sessions"), "--docker-warm", "1",
		"--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage, "--docker-network", w.network)
	runs := func() []string { return serverRuns(t, e.sess.Cmd.Process.Pid) }
	prompt := "Call fake:call_provider?path=chat/completions&header=Authorization&needle=" + masked(key)
	call := func(n int) string {
		t.Helper()
		_, rep := keylessTurn(t, e, n, map[string]any{"prompt": prompt})
		if found, ok := rep["needle_found"].([]any); !ok || len(found) != 0 {
			t.Errorf("call %d: the real key was inside the container at %v", n, rep["needle_found"])
		}
		return mcpsession.Str(rep, "host")
	}
	of := func(ids []string, host string) string {
		for _, id := range ids {
			if host != "" && strings.HasPrefix(id, host) {
				return id
			}
		}
		return ""
	}
	host1 := call(1)
	var before []string
	if !mcpsession.Eventually(60*time.Second, func() bool { before = runs(); return len(before) == 2 && of(before, host1) != "" }) {
		t.Fatalf("run containers after the first key-less turn: %v, want its own (%s, kept for its session) and a spare", before, host1)
	}
	time.Sleep(2 * time.Second) // its CLI initializes (milliseconds for the fake CLI)
	host2 := call(2)
	spare := of(before, host2)
	if spare == "" || strings.HasPrefix(spare, host1) {
		t.Fatalf("the second conversation ran in %q, not in the spare of %v (the first session's: %q)", host2, before, host1)
	}
	var after []string
	if !mcpsession.Eventually(60*time.Second, func() bool { after = runs(); return len(after) == 3 }) {
		t.Fatalf("run containers after the second turn: %v, want the two sessions' and a new spare", after)
	}
	if !slices.Contains(after, spare) || !slices.Contains(after, of(before, host1)) {
		t.Errorf("run containers after the second turn %v lack a session's (%s, %s)", after, host1, spare)
	}
	if withKey, _ := providerSaw(t, w, key); len(withKey) != 2 {
		t.Errorf("the provider got the real key in %d requests, want one per call: %v", len(withKey), withKey)
	}
}
