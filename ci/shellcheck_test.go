package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShellcheck: the gate's scripts, and the GitLab job's script as POSIX sh, are
// shellcheck-clean (every severity, style included).
func TestShellcheck(t *testing.T) {
	needTools(t, "shellcheck")
	c, _ := loadComponent(t)
	job := filepath.Join(t.TempDir(), "gitlab-job.sh")
	if err := os.WriteFile(job, []byte("#!/bin/sh\n"+strings.Join(c.Jobs["cline-mcp-review"].Script, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []string{script(t, "ci/gate.sh"), script(t, "ci/install.sh"), script(t, "ci/comment.sh")}
	for _, args := range [][]string{append([]string{"--severity=style"}, files...), {"--severity=style", "--shell=sh", job}} {
		code, stdout, stderr := run(t, exec.Command("shellcheck", args...), time.Minute)
		if code != 0 {
			t.Errorf("shellcheck %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
}
