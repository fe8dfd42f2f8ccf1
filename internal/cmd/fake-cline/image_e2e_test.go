//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestImageMirrorsRealImage builds images/fake-cline and runs it the way cline-mcp runs the real
// image (an unknown uid, read-only root, tmpfs HOME and /tmp, no network): run_commands goes
// through the image's /bin/bash and reports exactly what the real CLI reported for the same
// commands (y_run_commands_mixed), the machine-id shell leaves stderr clean, and the same image
// without /bin/bash fails every command the way the real CLI does without it
// (y_run_commands_no_shell).
func TestImageMirrorsRealImage(t *testing.T) {
	mcpsession.NeedDocker(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-cline")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+mcpsession.EngineArch())
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	df, err := os.ReadFile(filepath.Join("..", "..", "..", "images", "fake-cline", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	withShell := "cline-mcp/fake-cline:" + mcpsession.TestTag("shelltest")
	noShell := "cline-mcp/fake-cline:" + mcpsession.TestTag("noshelltest")
	buildImage(t, dir, withShell, string(df))
	buildImage(t, dir, noShell, "FROM scratch\nCOPY fake-cline /usr/local/bin/cline\nUSER 65534:65534\nENTRYPOINT [\"/usr/local/bin/cline\"]\n")

	t.Run("with shell", func(t *testing.T) {
		stdout, stderr := runImage(t, withShell, "false", "ls /nonexistent-dir", "echo ok")
		if got, want := toolOutput(t, stdout), toolOutput(t, readFile(t, filepath.Join("testdata", "recordings", "y_run_commands_mixed", "stdout.jsonl"))); got != want {
			t.Errorf("run_commands output differs from the real CLI's\ngot:  %s\nwant: %s", got, want)
		}
		if strings.Contains(stderr, "not found") {
			t.Errorf("stderr shows a missing program:\n%s", stderr)
		}
	})
	t.Run("without shell", func(t *testing.T) {
		stdout, _ := runImage(t, noShell, "echo hi")
		if got, want := toolOutput(t, stdout), toolOutput(t, readFile(t, filepath.Join("testdata", "recordings", "y_run_commands_no_shell", "stdout.jsonl"))); got != want {
			t.Errorf("run_commands output differs from the real CLI's without /bin/bash\ngot:  %s\nwant: %s", got, want)
		}
		if strings.Contains(stdout, `"content_update"`) {
			t.Errorf("a command that could not be spawned produced updates:\n%s", stdout)
		}
	})
}

func buildImage(t *testing.T, dir, ref, dockerfile string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("docker", "build", "-q", "-t", ref, dir).CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v\n%s", ref, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", ref).Run() })
}

// runImage runs the fake's run_commands scenario in a container hardened like cline-mcp's.
func runImage(t *testing.T, image string, commands ...string) (string, string) {
	t.Helper()
	q := ""
	for _, c := range commands {
		q += "&cmd=" + strings.ReplaceAll(c, " ", "%20")
	}
	cmd := exec.Command("docker", "run", "--rm", "--network", "none", "--read-only", "--user", "4242:4242",
		"--tmpfs", "/tmp:mode=1777", "--tmpfs", "/home/cline:uid=4242,gid=4242,mode=0700", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--init", "-e", "HOME=/home/cline", "-w", "/tmp", image,
		"--json", "--auto-approve", "true", "-c", "/tmp", "--data-dir", "/home/cline/data", "Run the commands fake:run_commands?"+q[1:])
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker run %s: %v\nstdout:\n%s\nstderr:\n%s", image, err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// toolOutput is the JSON of the output of the first content_end tool line.
func toolOutput(t *testing.T, stdout string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var line struct {
			Event struct {
				Type        string          `json:"type"`
				ContentType string          `json:"contentType"`
				Output      json.RawMessage `json:"output"`
			} `json:"event"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Event.Type == "content_end" && line.Event.ContentType == "tool" {
			return string(line.Event.Output)
		}
	}
	t.Fatalf("no content_end tool line in:\n%s", stdout)
	return ""
}
