package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func newCmd(t *testing.T, args []string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), fakeBin, args...)
	cmd.Env = baseEnv(t)
	return cmd
}

func TestCommitScenario(t *testing.T) {
	t.Run("git present", func(t *testing.T) {
		w := newWorkspace(t, "")
		r := runFake(t, invocation{args: w.args("Commit fake:commit?message=from%20fake")})
		if r.code != 0 {
			t.Fatalf("got exit %d: %s", r.code, r.stderr)
		}
		if log := gitRun(t, w.repo, "log", "--format=%s"); !strings.HasPrefix(log, "from fake\n") {
			t.Errorf("got log %q, want the fake's commit on top", log)
		}
	})
	t.Run("git absent", func(t *testing.T) {
		w := newWorkspace(t, "")
		r := runFake(t, invocation{args: w.args("Commit fake:commit"), env: []string{"PATH=/nonexistent"}})
		// Like the real CLI: /bin/bash -c reports the missing program (y_run_commands_mixed's format).
		if r.code != 0 || !strings.Contains(r.stdout, `"result":"[Command exited with code 127]\n\n[stderr]\n/bin/bash: line 1: git: command not found\n","error":"Command exited with code 127","success":false`) {
			t.Errorf("got exit %d, stdout %s", r.code, r.stdout)
		}
		if log := gitRun(t, w.repo, "log", "--format=%s"); log != "init\n" {
			t.Errorf("got log %q", log)
		}
	})
}

func TestExitScenarios(t *testing.T) {
	tests := []struct {
		prompt     string
		wantCode   int
		wantStdout string // substring
		wantStderr string // substring
	}{
		{"Reply fake:completed_then_exit1", 1, `"finishReason":"completed"`, `"type":"error","message":"session not found: `},
		{"Reply fake:finish_error_exit0", 0, `"finishReason":"error"`, ""},
		{"Reply fake:finish_error_exit0?transient=false", 0, `"errorClass":"auth"`, ""},
		{"Reply fake:garbage", 0, "this is not JSON", ""},
		{"Reply fake:module_not_found", 1, "", "code: 'MODULE_NOT_FOUND'"},
		{"Reply fake:transient_once_then_ok?kind=500", 1, "The server had an error", ""},
		{"Reply fake:slow?seconds=1&interval_ms=200", 0, `"text":"tick 5\n"`, ""},
		{"Reply fake:secrets?value=S3CR3T", 0, `API_KEY=S3CR3T`, "Bearer S3CR3T"},
		{"Reply fake:probe_read?path=/etc/hostname", 0, `\"path\":\"/etc/hostname\"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			w := newWorkspace(t, "")
			r := runFake(t, invocation{args: w.args(tt.prompt)})
			if r.code != tt.wantCode || !strings.Contains(r.stdout, tt.wantStdout) || !strings.Contains(r.stderr, tt.wantStderr) {
				t.Errorf("got exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
		})
	}
	t.Run("no_result has no terminal line", func(t *testing.T) {
		w := newWorkspace(t, "")
		r := runFake(t, invocation{args: w.args("Reply fake:no_result")})
		if r.code != 0 || strings.Contains(r.stdout, "run_result") || strings.Contains(r.stdout, `"done"`) {
			t.Errorf("got exit %d stdout %s", r.code, r.stdout)
		}
	})
	t.Run("module_not_found writes nothing", func(t *testing.T) {
		w := newWorkspace(t, "")
		_ = runFake(t, invocation{args: w.args("Reply fake:module_not_found")})
		if _, err := os.Stat(filepath.Join(w.data, "settings", "providers.json")); err == nil {
			t.Errorf("providers.json written")
		}
	})
}
