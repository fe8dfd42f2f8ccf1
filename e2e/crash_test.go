//go:build unix

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestServerKilledEndsItsClineRuns: a server killed with SIGKILL (a force-quit client, the OOM
// killer) cannot clean up, yet its lifeline watchdog ends the Cline process group within a few
// seconds — before any new server starts — and removes the call's private dir (it holds the
// settings copy). The run is started first and proven alive, so a pass cannot come from a run
// that never ran.
func TestServerKilledEndsItsClineRuns(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	rec := e.hangingWorkspaceRun()
	if !alive(rec.PID) {
		t.Fatalf("the hanging run %d is not running; the test would prove nothing", rec.PID)
	}
	calls, _ := filepath.Glob(filepath.Join(e.root, "tmp", "cline-mcp-call-*"))
	if len(calls) == 0 {
		t.Fatal("no private call dir while the run hangs")
	}
	killed := time.Now()
	if err := e.sess.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	if !mcpsession.Eventually(5*time.Second, func() bool { return !alive(rec.PID) && !groupAlive(rec.PGID) }) {
		t.Fatalf("Cline (pid %d, group %d) still runs 5 s after the server was killed", rec.PID, rec.PGID)
	}
	t.Logf("Cline's process group was gone %v after the server's SIGKILL", time.Since(killed).Round(time.Millisecond))
	if !mcpsession.Eventually(5*time.Second, func() bool {
		left, _ := filepath.Glob(filepath.Join(e.root, "tmp", "cline-mcp-call-*"))
		return len(left) == 0
	}) {
		left, _ := filepath.Glob(filepath.Join(e.root, "tmp", "cline-mcp-call-*"))
		t.Errorf("private call dirs left after the server died: %v", left)
	}
	for _, c := range calls {
		if _, err := os.Stat(c); !os.IsNotExist(err) {
			t.Errorf("%s still exists", c)
		}
	}
}

// TestServerKilledDuringOverrideLeavesDefaults: a server killed with SIGKILL while an override call
// runs leaves the user's providers.json exactly as it was (the override lived in a private copy,
// which the watchdog deletes), so the next `cline` or default call uses the user's own provider.
func TestServerKilledDuringOverrideLeavesDefaults(t *testing.T) {
	e := newEnv(t)
	e.writeProviders(mcpsession.ProvidersTwo)
	before, err := os.ReadFile(e.providers)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = e.sess.CallErr(ctx, "ask_cline", map[string]any{"prompt": "go fake:token_refresh?token=tok-crash&wait_file=" + filepath.Join(e.root, "never"),
			"cwd": e.work, "provider": "openai-native", "model": "gpt-crash"}, nil)
	}()
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(e.records()) == 1 }) {
		t.Fatal("the override run never started")
	}
	rec := e.records()[0]
	if rec.Provider != "openai-native" || rec.Model != "gpt-crash" {
		t.Fatalf("the run resolved %s/%s, want the override; the test would prove nothing", rec.Provider, rec.Model)
	}
	copyData, err := os.ReadFile(rec.ProvidersPath)
	if err != nil || !strings.Contains(string(copyData), "gpt-crash") {
		t.Fatalf("the run's settings copy %s does not carry the override (%v); the test would prove nothing", rec.ProvidersPath, err)
	}
	if err := e.sess.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.sess.Exited()
	after, err := os.ReadFile(e.providers)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("providers.json after the server was killed mid-override:\n%s\nwant it unchanged\n%s", after, before)
	}
	if !mcpsession.Eventually(5*time.Second, func() bool { _, err := os.Stat(rec.ProvidersPath); return os.IsNotExist(err) }) {
		t.Errorf("the settings copy %s (it holds keys) outlived the killed server by 5 s", rec.ProvidersPath)
	}
	// The next server's default call runs on the defaults.
	e2 := newEnvLike(t, e)
	res, sc := e2.call("ask_cline", map[string]any{"prompt": "go fake:pong"})
	mcpsession.WantOK(t, res, sc)
	if recs := e2.records(); recs[len(recs)-1].Provider != "openai-compatible" || recs[len(recs)-1].Model != "fake-model" {
		t.Errorf("the next default run saw %s/%s, want openai-compatible/fake-model", recs[len(recs)-1].Provider, recs[len(recs)-1].Model)
	}
}
