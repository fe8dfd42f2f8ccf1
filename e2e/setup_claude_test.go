//go:build e2e && linux

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/netns"
)

// TestSetupClaudeCodeMcpList: `cline-mcp setup claude-code` writes the user-scope entry into
// ~/.claude.json, keeping what Claude Code already had there, and Claude Code's own
// `claude mcp list` (HOME pointed at a fresh directory, in a private network namespace) reads it,
// starts the server by the path setup wrote, and reports it connected; with both Claude Code
// releases the suite runs.
func TestSetupClaudeCodeMcpList(t *testing.T) {
	for _, v := range []string{claudeCodeVersion, claudeCodeLatest} {
		t.Run(v, func(t *testing.T) { setupClaudeMcpList(t, v) })
	}
}

func setupClaudeMcpList(t *testing.T, version string) {
	bin := claudeCode(t, version)
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + t.TempDir(),
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1"}
	// what Claude Code keeps in the file besides servers must survive setup
	existing := `{"numStartups": 7, "hasCompletedOnboarding": true, "mcpServers": {}}`
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(existing), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	setup := exec.CommandContext(ctx, bins.ClineMCP, "setup", "claude-code", "--cline", bins.FakeCline, "--log-level", "debug")
	setup.Env = env
	out, err := setup.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "claude mcp list") {
		t.Fatalf("setup claude-code: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
	if !strings.Contains(string(b), `"numStartups": 7`) || !strings.Contains(string(b), `"hasCompletedOnboarding": true`) {
		t.Fatalf("setup lost Claude Code's own settings:\n%s", b)
	}
	var list []byte
	err = netns.Run(func() error {
		cmd := exec.CommandContext(ctx, bin, "mcp", "list")
		cmd.Dir, cmd.Env = home, env
		var err error
		list, err = cmd.CombinedOutput()
		return err
	})
	if err != nil {
		t.Fatalf("claude mcp list: %v\n%s", err, list)
	}
	exe, _ := filepath.EvalSymlinks(bins.ClineMCP)
	line := ""
	for _, l := range strings.Split(string(list), "\n") {
		if strings.HasPrefix(l, "cline:") {
			line = l
		}
	}
	if !strings.Contains(line, exe) || !strings.Contains(line, "Connected") {
		t.Fatalf("claude mcp list does not show cline as %s, connected:\n%s", exe, list)
	}
	t.Logf("claude mcp list: %s", line)
}
