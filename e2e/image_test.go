//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// launchWrongDockerCLI: --docker-cline naming a path the image lacks is launch_failed with the
// fix, not cline_updating: an image cannot be mid-update, so nothing is retried.
func launchWrongDockerCLI(t *testing.T, w *world) {
	w2 := newWorld(t, docker, worldOpts{args: []string{"--docker-cline", "/usr/local/bin/no-such-cline"}})
	res, sc := w2.call("ask_cline", map[string]any{"prompt": "hello there"})
	wantResult(t, res, sc, "launch_failed", 1)
	if msg := mcpsession.Str(sc, "message"); !strings.Contains(msg, "--docker-cline") || !strings.Contains(msg, "/usr/local/bin/no-such-cline") {
		t.Errorf("got message %q, want the path and the fix (--docker-cline)", msg)
	}
	if sc["retryable"] != false {
		t.Errorf("got retryable %v, want false", sc["retryable"])
	}
}

// analysisCommands: an analysis call whose model runs a command and tries to write. On the host
// run_commands is disabled (nothing runs); in a container it is allowed, runs through the image's
// /bin/bash, `echo` succeeds and `touch` fails on the read-only mount (success:false). Neither
// column warns: a failed write is not a successful mutation, and commands are the Docker
// analysis policy.
func analysisCommands(t *testing.T, w *world, sc map[string]any) {
	if ws, _ := sc["warnings"].([]any); len(ws) > 0 {
		t.Errorf("got warnings %v, want none", ws)
	}
	if m, _ := filepath.Glob(filepath.Join(w.root, "*", "pwned")); len(m) > 0 {
		t.Errorf("the analysis call wrote %v", m)
	}
	if _, err := os.Stat(filepath.Join(w.work, "pwned")); !os.IsNotExist(err) {
		t.Errorf("the analysis call wrote pwned in the work tree (%v)", err)
	}
}
