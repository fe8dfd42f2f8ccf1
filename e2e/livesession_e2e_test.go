//go:build e2e && unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// plant is a turn that leaves a file in its container's /tmp (a tmpfs of that container alone);
// probe a turn that copies it, if its container has it, into the session's data dir, which the
// host sees (the marker that the container was the same), and records the container's name.
const (
	plant = "fake:run_commands?cmd=echo%20planted%20%3E%20/tmp/planted&cmd=read%20h%20%3C%20/etc/hostname%3B%20echo%20$h%20%3E%20$CLINE_DATA_DIR/host1"
	probe = "fake:run_commands?cmd=read%20h%20%3C%20/etc/hostname%3B%20echo%20$h%20%3E%20$CLINE_DATA_DIR/host2&cmd=read%20x%20%3C%20/tmp/planted%20%26%26%20echo%20$x%20%3E%20$CLINE_DATA_DIR/seen"
)

// serverContainers are the containers of the server with pid.
func serverContainers(t *testing.T, pid int) []string {
	t.Helper()
	ids, err := mcpsession.ContainersOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// serverRuns are the run containers of the server with pid (a tool's; the egress proxy is a
// container of the server too).
func serverRuns(t *testing.T, pid int) []string {
	t.Helper()
	var out []string
	for _, id := range serverContainers(t, pid) {
		if containerLabel(t, id, "cline-mcp.tool") != "" {
			out = append(out, id)
		}
	}
	return out
}

// sessionData is the data dir of container session id under the sessions dir.
func sessionData(t *testing.T, sessions, id string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(sessions, "data", "*", "sessions", id))
	if len(m) != 1 {
		t.Fatalf("session %s has no data dir of its own: %v", id, m)
	}
	return filepath.Dir(filepath.Dir(m[0]))
}

// readTrimmed is the file's text without surrounding space ("" when it cannot be read).
func readTrimmed(p string) string { b, _ := os.ReadFile(p); return strings.TrimSpace(string(b)) }

// TestLiveContainerSession: a Docker conversation keeps its container and its ACP process between
// turns. Turn 2 runs in turn 1's container (the same container name, and the file turn 1 planted
// in the container's /tmp is there) and Cline sees the earlier turns; another session, and another
// tool, get a container of their own, without the planted file; when the warm idle time ends, the
// containers and the directories their settings copies lived in are gone, and the session goes on
// in a new container.
func TestLiveContainerSession(t *testing.T) {
	sessions := filepath.Join(t.TempDir(), "sessions")
	w := newWorld(t, docker, worldOpts{args: []string{"--cline-protocol", "acp", "--sessions-dir", sessions, "--warm-idle", "6s", "--warm-agents", "3"}})
	mine := func() []string { return serverContainers(t, w.sess.Cmd.Process.Pid) }
	dataOf := func(id string) string { return sessionData(t, sessions, id) }
	gitInit(t, w.work, map[string]string{"README.md": "x\n"})

	_, first := w.call("ask_cline", map[string]any{"prompt": "remember this " + plant})
	wantOK(t, first)
	id, _ := first["sessionId"].(string)
	data := dataOf(id)
	host1 := readTrimmed(filepath.Join(data, "host1"))
	if host1 == "" {
		t.Fatalf("turn 1 did not run its commands in the container (no host1 in %s): %v", data, first)
	}
	if ids := mine(); len(ids) != 1 {
		t.Fatalf("after turn 1 the server has containers %v, want the session's one kept", ids)
	}
	kept := mine()[0]

	_, second := w.call("ask_cline", map[string]any{"prompt": probe, "sessionId": id})
	wantOK(t, second)
	if got := readTrimmed(filepath.Join(data, "host2")); got != host1 {
		t.Errorf("turn 2 ran in container %q, turn 1 in %q: the container was not kept", got, host1)
	}
	if got := readTrimmed(filepath.Join(data, "seen")); got != "planted" {
		t.Errorf("turn 2 did not see the file turn 1 planted in its container (%q)", got)
	}
	if ws, _ := second["warnings"].([]any); len(ws) > 0 {
		t.Errorf("the kept container's turn has warnings: %v", ws)
	}
	if enf, _ := second["enforcement"].(map[string]any); enf == nil || enf["container"] == nil {
		t.Errorf("the kept container's turn reports no container: %v", second["enforcement"])
	}
	_, third := w.call("ask_cline", map[string]any{"prompt": "fake:history", "sessionId": id})
	wantOK(t, third)
	if got, _ := third["text"].(string); !strings.HasPrefix(got, "earlier=2 first=remember this") {
		t.Errorf("turn 3 did not see the earlier turns: %q", got)
	}
	if ids := mine(); len(ids) != 1 || ids[0] != kept {
		t.Errorf("after three turns of one session the server has containers %v, want %s alone", ids, kept)
	}

	// Another session: a container of its own, which has nothing of the first one's.
	_, other := w.call("ask_cline", map[string]any{"prompt": probe})
	wantOK(t, other)
	otherData := dataOf(other["sessionId"].(string))
	if got := readTrimmed(filepath.Join(otherData, "host2")); got == "" || got == host1 {
		t.Errorf("another session ran in container %q (the first session's: %q)", got, host1)
	}
	if _, err := os.Stat(filepath.Join(otherData, "seen")); !os.IsNotExist(err) {
		t.Errorf("another session saw the file the first session planted in its container: %v", err)
	}
	if ids := mine(); len(ids) != 2 {
		t.Errorf("with two live sessions the server has containers %v, want two", ids)
	}
	if m, _ := filepath.Glob(filepath.Join(w.tmp, "cline-mcp-agent-*")); len(m) != 2 {
		t.Errorf("the kept containers' settings dirs: %v, want two", m)
	}

	// Another tool in the same directory: a container of its own, which its own session keeps.
	_, ws := w.call("ask_cline_workspace", map[string]any{"prompt": probe})
	wantOK(t, ws)
	wsID := ws["sessionId"].(string)
	wsData := dataOf(wsID)
	if got := readTrimmed(filepath.Join(wsData, "host2")); got == "" || got == host1 {
		t.Errorf("ask_cline_workspace ran in container %q (the ask_cline session's: %q)", got, host1)
	}
	if _, err := os.Stat(filepath.Join(wsData, "seen")); !os.IsNotExist(err) {
		t.Errorf("ask_cline_workspace saw the file an ask_cline session planted in its container: %v", err)
	}
	_, ws2 := w.call("ask_cline_workspace", map[string]any{"prompt": plant, "sessionId": wsID})
	wantOK(t, ws2)
	_, ws3 := w.call("ask_cline_workspace", map[string]any{"prompt": probe, "sessionId": wsID})
	wantOK(t, ws3)
	if h1, h2 := readTrimmed(filepath.Join(wsData, "host1")), readTrimmed(filepath.Join(wsData, "host2")); h1 == "" || h1 != h2 || readTrimmed(filepath.Join(wsData, "seen")) != "planted" {
		t.Errorf("ask_cline_workspace's session did not keep its container: turn 2 in %q, turn 3 in %q", h1, h2)
	}
	if ids := mine(); len(ids) != 3 {
		t.Errorf("with three live sessions the server has containers %v, want three", ids)
	}

	// The idle time ends them all: no container, no settings copy left.
	if !mcpsession.Eventually(60*time.Second, func() bool { return len(mine()) == 0 }) {
		t.Fatalf("the idle sessions' containers %v are still there", mine())
	}
	if !mcpsession.Eventually(10*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(w.tmp, "cline-mcp-agent-*"))
		return len(m) == 0
	}) {
		t.Errorf("the settings dirs of the ended containers are still there")
	}
	// The session goes on in a new container after its kept one ended.
	_, fourth := w.call("ask_cline", map[string]any{"prompt": "fake:history", "sessionId": id})
	wantOK(t, fourth)
	if got, _ := fourth["text"].(string); !strings.HasPrefix(got, "earlier=3 first=remember this") {
		t.Errorf("after the idle end the session lost its history: %q", got)
	}
}

// TestLiveContainerSessionKilledServer: a server SIGKILLed while a session's container is kept
// between turns leaves no container behind (its lifeline watchdog removes it).
func TestLiveContainerSessionKilledServer(t *testing.T) {
	sessions := filepath.Join(t.TempDir(), "sessions")
	e := newDockerEnv(t, "--cline-protocol", "acp", "--sessions-dir", sessions, "--warm-idle", "10m")
	mine := func() []string { return serverContainers(t, e.sess.Cmd.Process.Pid) }
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "fake:pong"})
	wantDockerOK(t, sc)
	if ids := mine(); len(ids) != 1 || !containerRunning(t, ids[0]) {
		t.Fatalf("no kept running container of the server after the turn (%v): the test would prove nothing", ids)
	}
	if err := e.sess.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(mine()) == 0 }) {
		t.Fatalf("the killed server's kept container(s) %v still exist", mine())
	}
}

// TestLiveContainerSessionCopyMode: a copy-mode engine (--docker-mounts copy) keeps a session's
// container too. What turn 1 wrote in the session's data dir is on the host right after the turn
// (brought back while the container runs); turn 2 runs in the same container and sees the file
// turn 1 planted in its /tmp; the file turn 1 wrote and turn 3 removes is gone from the host after
// turn 3 (which only a renewed record of what the container holds can tell); the history carries on.
func TestLiveContainerSessionCopyMode(t *testing.T) {
	sessions := filepath.Join(t.TempDir(), "sessions")
	w := newWorld(t, docker, worldOpts{args: []string{"--cline-protocol", "acp", "--sessions-dir", sessions, "--docker-mounts", "copy", "--warm-idle", "60s"}})
	mine := func() []string { // the run containers, not their never-started fillers
		var out []string
		for _, id := range serverRuns(t, w.sess.Cmd.Process.Pid) {
			if containerLabel(t, id, "cline-mcp.role") != "filler" {
				out = append(out, id)
			}
		}
		return out
	}
	gitInit(t, w.work, map[string]string{"README.md": "x\n"})
	_, first := w.call("ask_cline", map[string]any{"prompt": "remember this " + plant})
	wantOK(t, first)
	id, _ := first["sessionId"].(string)
	data := sessionData(t, sessions, id)
	host1 := readTrimmed(filepath.Join(data, "host1"))
	if host1 == "" {
		t.Fatalf("turn 1's data did not come back from its copy-mode container (no host1 in %s): %v", data, first)
	}
	kept := mine()
	if len(kept) != 1 {
		t.Fatalf("after turn 1 the server has run containers %v, want the session's one kept", kept)
	}
	_, second := w.call("ask_cline", map[string]any{"prompt": probe, "sessionId": id})
	wantOK(t, second)
	if got := readTrimmed(filepath.Join(data, "host2")); got != host1 || readTrimmed(filepath.Join(data, "seen")) != "planted" {
		t.Errorf("turn 2 ran in container %q (turn 1 in %q) and saw %q, want the kept one and its planted file", got, host1, readTrimmed(filepath.Join(data, "seen")))
	}
	_, third := w.call("ask_cline", map[string]any{"prompt": "fake:run_commands?cmd=rm%20$CLINE_DATA_DIR/host1", "sessionId": id})
	wantOK(t, third)
	if _, err := os.Stat(filepath.Join(data, "host1")); !os.IsNotExist(err) {
		t.Errorf("the file turn 3 removed in the container is still on the host: %v", err)
	}
	_, fourth := w.call("ask_cline", map[string]any{"prompt": "fake:history", "sessionId": id})
	wantOK(t, fourth)
	if got, _ := fourth["text"].(string); !strings.HasPrefix(got, "earlier=3 first=remember this") {
		t.Errorf("the copy-mode session lost its history: %q", got)
	}
	if ids := mine(); len(ids) != 1 || ids[0] != kept[0] {
		t.Errorf("after four turns the server has run containers %v, want %v alone", ids, kept)
	}
}

// keylessTurn is the n-th ask_cline turn of a key-less Docker server running call_provider: it
// must be key-less (credentialOutside, the marker) and reach the provider through the proxy with
// a placeholder for the key. It returns the result and call_provider's report.
func keylessTurn(t *testing.T, e *env, n int, args map[string]any) (sc, rep map[string]any) {
	t.Helper()
	sc, _ = dockerCall(e, "ask_cline", args)
	wantDockerOK(t, sc)
	if enf, _ := enforcementOf(t, sc); enf["credentialOutside"] != true {
		t.Fatalf("turn %d was not key-less, the test would prove nothing: %v", n, enf)
	}
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
		t.Fatalf("turn %d: report %q: %v", n, sc["text"], err)
	}
	if rep["status"] != float64(200) || rep["api_key_prefix"] != "sk-cline-mcp-placeholder-" {
		t.Errorf("turn %d: the provider through the proxy answered %v with key %v..., want 200 and a placeholder", n, rep["status"], rep["api_key_prefix"])
	}
	return sc, rep
}

// TestLiveContainerSessionKeyless: a key-less session (the provider key with the egress proxy;
// the result says so, the marker) keeps its container too. Between its turns the proxy lends the
// key to nothing: the CLI process of turn 1, still running in the kept container, calls the
// provider again after the turn (its report is shown to exist) and is refused, and turn 2's
// enforcement names that refusal. Turn 2 runs in the same container and reaches the provider
// with the key again, under its own allowance; each turn's answers are counted.
func TestLiveContainerSessionKeyless(t *testing.T) {
	w := newEgressWorld(t)
	key := secretKey(t)
	e := keylessEnv(t, w, key)
	sessions := filepath.Join(t.TempDir(), "sessions")
	e.startWithEnv(nil, "--cline-protocol", "acp", "--sessions-dir", sessions, "--warm-idle", "30s",
		"--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage, "--docker-network", w.network)
	runs := func() []string { return serverRuns(t, e.sess.Cmd.Process.Pid) }
	turn := func(n int, prompt, session string) (map[string]any, map[string]any) {
		t.Helper()
		args := map[string]any{"prompt": prompt}
		if session != "" {
			args["sessionId"] = session
		}
		return keylessTurn(t, e, n, args)
	}
	call := "fake:call_provider?path=chat/completions&header=Authorization"
	first, rep1 := turn(1, call+"&later=1000", "")
	id, _ := first["sessionId"].(string)
	kept := runs()
	if len(kept) != 1 || !strings.HasPrefix(kept[0], mcpsession.Str(rep1, "host")) {
		t.Fatalf("after a key-less turn the server's run containers are %v, want turn 1's (%v) kept", kept, rep1["host"])
	}
	late := filepath.Join(sessionData(t, sessions, id), "late.json")
	var lateRep map[string]any
	if !mcpsession.Eventually(20*time.Second, func() bool {
		b, err := os.ReadFile(late)
		return err == nil && json.Unmarshal(b, &lateRep) == nil
	}) {
		t.Fatalf("the kept process made no provider request between the turns (no %s): the test would prove nothing", late)
	}
	if lateRep["status"] != float64(403) || !strings.Contains(mcpsession.Str(lateRep, "head"), "no provider credential is lent") {
		t.Errorf("between the turns the provider request got %v %v, want the proxy's refusal", lateRep["status"], lateRep["head"])
	}

	second, rep2 := turn(2, call, id)
	if rep2["host"] != rep1["host"] {
		t.Errorf("turn 2 ran in %v, not in the session's kept container %v", rep2["host"], rep1["host"])
	}
	enf, _ := enforcementOf(t, second)
	if refused, _ := enf["refusedEndpoints"].([]any); !slices.Contains(refused, any("provider.cline-mcp.invalid:80")) {
		t.Errorf("turn 2's enforcement does not name the refusal between the turns: %v", enf)
	}
	if withKey, _ := providerSaw(t, w, key); len(withKey) != 2 {
		t.Errorf("the provider got the real key in %d requests, want one per turn: %v", len(withKey), withKey)
	}
}

// plantProviders is a turn that rewrites the settings its CLI reads (the data dir's settings/).
const plantProviders = "fake:run_commands?cmd=echo%20%27%7B%22version%22%3A1%2C%22lastUsedProvider%22%3A%22planted-provider%22%7D%27%20%3E%20$CLINE_DATA_DIR%2Fsettings%2Fproviders.json"

// TestContainerSessionSettingsComeBack: what a container session's CLI writes into its settings
// (the data dir's settings/, where it reads them) is what the host reads after the turn, with
// bind mounts and in copy mode alike: the change is named in a warning and dropped. A copy-mode
// session's host used to read the copy under the call's own dir, which the CLI never sees, and
// said nothing (and would not have known a secret written there). The warning is the marker:
// without the write there is none.
func TestContainerSessionSettingsComeBack(t *testing.T) {
	for _, mode := range []string{"bind", "copy"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t, docker, worldOpts{args: []string{"--cline-protocol", "acp", "--sessions-dir", t.TempDir(), "--docker-mounts", mode}})
			_, sc := w.call("ask_cline", map[string]any{"prompt": "plant " + plantProviders})
			wantOK(t, sc)
			if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "the run changed lastUsedProvider") {
				t.Errorf("the settings the run wrote were not read back: warnings %s", ws)
			}
		})
	}
}
