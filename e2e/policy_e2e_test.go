//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestAnalysisWorkspaceHooks: a repository with its own Cline hook is not analysed on the host
// (the CLI would run the hook on this machine and nothing switches it off): launch_failed naming
// the directory, the CLI never started. In Docker the call runs, and the result says the hook ran
// inside the container.
func TestAnalysisWorkspaceHooks(t *testing.T) {
	e := newDockerEnv(t)
	hook := filepath.Join(e.work, ".cline", "hooks", "TaskStart")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/bash\ntouch /tmp/pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, sc := e.call("ask_cline", map[string]any{"prompt": "Reply with PONG"})
	if sc["kind"] != "launch_failed" || !strings.Contains(mcpsession.Str(sc, "message"), filepath.Join(".cline", "hooks")) {
		t.Errorf("host: got %v %q, want launch_failed naming .cline/hooks", sc["kind"], sc["message"])
	}
	if n := len(e.records()); n != 0 {
		t.Errorf("host: the CLI ran %d time(s), want never", n)
	}
	// From a subdirectory of the repository the CLI still finds the hooks at its top.
	gitInit(t, e.work, map[string]string{"src/main.go": "package main\n"})
	_, sc = e.call("ask_cline", map[string]any{"prompt": "Reply with PONG", "cwd": filepath.Join(e.work, "src")})
	if sc["kind"] != "launch_failed" || len(e.records()) != 0 {
		t.Errorf("host, cwd in a subdirectory: got %v %q, want launch_failed without running the CLI", sc["kind"], sc["message"])
	}
	sc, _ = dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantDockerOK(t, sc)
	if ws := strings.Join(strs(sc["warnings"]), "\n"); !strings.Contains(ws, "ran inside the container") || !strings.Contains(ws, hook[:len(hook)-len("/TaskStart")]) {
		t.Errorf("docker: got warnings %q, want the repository's hooks named", ws)
	}
}

func strs(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
