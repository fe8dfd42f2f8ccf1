package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDoctor builds cline-mcp and fake-cline and runs `cline-mcp doctor` the way a user would,
// checking the exit status, the OK/FAIL/WARN lines, the fixes, and that no secret is printed.
func TestDoctor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary (skipped with -short)")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the fake CLI and the unix:// Docker address are Unix-only")
	}
	bin := t.TempDir()
	server, fake := filepath.Join(bin, "cline-mcp"), filepath.Join(bin, "fake-cline")
	for out, pkg := range map[string]string{server: ".", fake: "../../internal/cmd/fake-cline"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed; the doctor's git check would fail every case")
	}
	sharedRoot := filepath.Join(t.TempDir(), "shared-root")
	if err := os.Mkdir(sharedRoot, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sharedRoot, 0o777); err != nil {
		t.Fatal(err)
	}
	const secret = "sk-doctor-secret-0123456789abcdef"
	const envSecret = "sk-env-secret-abcdef0123456789"
	validSettings := `{
  "version": 1,
  "lastUsedProvider": "openai-compatible",
  "providers": {
    "openai-compatible": {
      "settings": {"provider": "openai-compatible", "apiKey": "` + secret + `", "model": "fake-model", "baseUrl": "http://127.0.0.1:18080/v1"},
      "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"
    }
  }
}
`
	cases := []struct {
		name     string
		args     []string
		settings *string // nil: no providers.json
		path     string  // PATH; "" = git's directory only
		exit     int
		want     []string // line prefixes (status and check name) that must appear
		wantFix  []string // checks whose fix line must follow
		notWant  []string
		files    map[string]string // more files under HOME
		wantText []string          // substrings of the output
	}{
		{name: "all good, docker not configured", args: []string{"--cline", fake}, settings: &validSettings, exit: 0,
			want:    []string{"OK   cline executable", "OK   cline settings", "OK   git", "OK   worktree root", "WARN docker", "doctor: all required checks passed"},
			notWant: []string{"FAIL"}},
		{name: "cline missing", args: []string{"--cline", filepath.Join(bin, "no-such-cline")}, settings: &validSettings, exit: 1,
			want: []string{"FAIL cline executable", "OK   cline settings", "doctor: some required checks failed"}, wantFix: []string{"cline executable"}},
		{name: "cline not on PATH", settings: &validSettings, exit: 1,
			want: []string{"FAIL cline executable"}, wantFix: []string{"cline executable"}},
		{name: "corrupt settings", args: []string{"--cline", fake}, settings: ptr(`{"version": 1, "providers": {`), exit: 1,
			want: []string{"OK   cline executable", "FAIL cline settings"}, wantFix: []string{"cline settings"}},
		{name: "no settings", args: []string{"--cline", fake}, exit: 1,
			want: []string{"FAIL cline settings"}, wantFix: []string{"cline settings"}},
		{name: "docker configured but unreachable", args: []string{"--cline", fake, "--isolation", "docker"}, settings: &validSettings, exit: 1,
			want: []string{"OK   cline executable", "FAIL docker", "doctor: some required checks failed"}, wantFix: []string{"docker"}},
		{name: "worktree root open to others", args: []string{"--cline", fake, "--worktree-root", sharedRoot}, settings: &validSettings, exit: 1,
			want: []string{"FAIL worktree root", "doctor: some required checks failed"}, wantFix: []string{"worktree root"}},
		{name: "user MCP servers and hooks", args: []string{"--cline", fake}, settings: &validSettings, exit: 0,
			files: map[string]string{
				".cline/data/settings/cline_mcp_settings.json": `{"mcpServers": {"git": {"command": "git-mcp"}, "fs": {"command": "fs-mcp"}}}`,
				"Documents/Cline/Hooks/TaskStart":              "#!/bin/bash\n",
				".cline/hooks/TaskStart":                       "#!/bin/bash\n",
			},
			want:     []string{"OK   analysis tools", "OK   mcp servers", "WARN cline hooks"},
			wantFix:  []string{"cline hooks"},
			wantText: []string{"configures fs, git: switched off for the analysis tools (ask_cline, ask_cline_workspace, review_cline", filepath.Join("Documents", "Cline", "Hooks") + " run in every host analysis call"}},
		{name: "docker retries configured but unreachable", args: []string{"--cline", fake, "--retry-isolation", "docker"}, settings: &validSettings, exit: 1,
			want: []string{"FAIL docker"}, wantFix: []string{"docker"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			if c.settings != nil {
				p := filepath.Join(home, ".cline", "data", "settings", "providers.json")
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(*c.settings), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for rel, content := range c.files {
				p := filepath.Join(home, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			path := c.path
			if path == "" {
				path = filepath.Dir(gitPath)
				if _, err := os.Stat(filepath.Join(path, "cline")); err == nil {
					// git's directory also holds a real cline: use a private PATH with git only.
					dir := t.TempDir()
					if err := os.Symlink(gitPath, filepath.Join(dir, "git")); err != nil {
						t.Fatal(err)
					}
					path = dir
				}
			}
			cmd := exec.Command(server, append([]string{"doctor"}, c.args...)...)
			cmd.Env = []string{"HOME=" + home, "PATH=" + path, "DOCKER_HOST=unix:///nonexistent/docker.sock",
				"OPENAI_API_KEY=" + envSecret, "TMPDIR=" + t.TempDir()}
			text := runDoctor(t, cmd, c.exit, c.want, c.wantFix)
			for _, w := range c.wantText {
				if !strings.Contains(text, w) {
					t.Errorf("output lacks %q:\n%s", w, text)
				}
			}
			for _, nw := range c.notWant {
				if strings.Contains(text, nw) {
					t.Errorf("output contains %q:\n%s", nw, text)
				}
			}
			for _, s := range []string{secret, secret[:12], envSecret, envSecret[:12]} {
				if strings.Contains(text, s) {
					t.Errorf("doctor printed the secret fragment %q:\n%s", s, text)
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }

// runDoctor runs a doctor command and checks its exit status, that a line starts with each of
// want, and that each check in wantFix is followed by a fix line. It returns the output.
func runDoctor(t *testing.T, cmd *exec.Cmd, exit int, want, wantFix []string) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if code != exit {
		t.Errorf("got exit %d, want %d\n%s", code, exit, text)
	}
	lines := strings.Split(text, "\n")
	for _, w := range want {
		if !hasPrefixLine(lines, w) {
			t.Errorf("no line starting with %q:\n%s", w, text)
		}
	}
	for _, name := range wantFix {
		if !fixFollows(lines, name) {
			t.Errorf("the %s check has no fix line:\n%s", name, text)
		}
	}
	return text
}

func hasPrefixLine(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// fixFollows reports whether the FAIL/WARN line of check name is followed by a "fix:" line.
func fixFollows(lines []string, name string) bool {
	for i, l := range lines {
		if (strings.HasPrefix(l, "FAIL "+name) || strings.HasPrefix(l, "WARN "+name)) && i+1 < len(lines) {
			return strings.Contains(lines[i+1], "fix: ")
		}
	}
	return false
}
