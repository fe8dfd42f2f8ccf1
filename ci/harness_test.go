// Package ci tests the review gate (gate.sh), its installer and its PR comment, and runs the
// GitHub Action (action.yml) and the GitLab component (templates/review.yml) the way their
// runners would: each script step executed directly, against the built cline-mcp and the fake
// CLI, real git repositories, and loopback stand-ins for GitHub's API and the release page.
package ci

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

var binDir string // where the binaries of this test process are built (once)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cline-mcp-gate-bins-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// binaries builds cline-mcp and the fake CLI (once per process).
func binaries(t *testing.T) mcpsession.Binaries {
	t.Helper()
	b, err := mcpsession.Build(binDir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// needTools skips (fails under CI=true) when a tool the scripts need is missing.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs the gate scripts (skipped with -short)")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the gate scripts run on Linux and macOS runners")
	}
	for _, tool := range append([]string{"bash", "jq", "git", "curl", "tar"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true and %s is not installed (.ci/run installs it)", tool)
			}
			t.Skipf("!!! SKIPPED: %s is not installed", tool)
		}
	}
}

// script is the absolute path of a file of this repository, given relative to its root.
func script(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// world is one job's machine: HOME with Cline's settings, TMPDIR, a checkout with a base
// branch (main, also as origin/main) and a change on top (feature, checked out).
type world struct {
	root, home, work, out string
	base, head            string // the commits of main and feature
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work"), out: filepath.Join(root, "out")}
	settings := filepath.Join(w.home, ".cline", "data", "settings")
	for _, d := range []string{settings, w.work, filepath.Join(root, "tmp"), filepath.Join(root, "state")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(settings, "providers.json"), []byte(mcpsession.ProvidersTwo), 0o600); err != nil {
		t.Fatal(err)
	}
	w.git(t, "init", "-q", "-b", "main")
	w.write(t, "app.go", "package main\n\nfunc main() {}\n")
	w.write(t, "README.md", "hello\n")
	w.git(t, "add", "-A")
	w.git(t, "commit", "-q", "-m", "base")
	w.base = w.git(t, "rev-parse", "HEAD")
	w.git(t, "update-ref", "refs/remotes/origin/main", w.base)
	w.git(t, "checkout", "-q", "-b", "feature")
	w.write(t, "app.go", "package main\n\nfunc main() {\n\ta := 1\n\tb := a / 0\n\t_ = b\n}\n")
	w.git(t, "commit", "-q", "-am", "divide")
	w.head = w.git(t, "rev-parse", "HEAD")
	return w
}

func (w *world) write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.work, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (w *world) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = w.work
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// env is the environment every script of this world runs with (nothing of the test's own
// but PATH), plus extra KEY=value entries.
func (w *world) env(extra map[string]string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.home,
		"TMPDIR=" + filepath.Join(w.root, "tmp"),
		"FAKE_CLINE_STATE_DIR=" + filepath.Join(w.root, "state"),
		"GIT_CONFIG_NOSYSTEM=1",
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// answer is a fake-cline prompt whose answer is a review ending in the findings block.
func answer(block string) string {
	return "fake:pong?text=" + url.QueryEscape("The change looks risky.\n\n```json\n"+block+"\n```")
}

// fakeArgs are the cline-mcp flags (one per line, as the gate's args input) that make the
// review run the fake CLI.
func fakeArgs(b mcpsession.Binaries) string {
	return strings.Join([]string{"--cline", b.FakeCline, "--stop-grace", "500ms"}, "\n")
}

// run is the exit code, stdout and stderr of cmd; a command that does not end within limit
// is killed and fails the test.
func run(t *testing.T, cmd *exec.Cmd, limit time.Duration) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not end within %v\nstdout:\n%s\nstderr:\n%s", cmd.Args, limit, out.String(), errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, errb.String())
	}
	return code, out.String(), errb.String()
}

// outputs reads a GITHUB_OUTPUT file (name=value lines; the gate writes no multi-line value).
func outputs(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.Contains(k, "<<") {
			t.Fatalf("output line %q is not name=value", line)
		}
		if _, dup := m[k]; dup {
			t.Errorf("output %s written twice", k)
		}
		m[k] = v
	}
	return m
}

// writeExecutable writes an executable shell script: a stand-in for cline-mcp.
func writeExecutable(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
