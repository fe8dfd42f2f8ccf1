//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestDoctorDocker runs `cline-mcp doctor --isolation docker` against the real engine and the
// fake image: no host CLI is needed, the network must exist, and the CLI and the shell it runs
// commands with must work inside the image.
func TestDoctorDocker(t *testing.T) {
	mcpsession.NeedDocker(t)
	bins, err := mcpsession.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := mcpsession.BuildFakeImage(bins); err != nil {
		t.Fatal(err)
	}
	// The same fake without /bin/bash and /bin/sh: what images/fake-cline was before it
	// mirrored the real image, and what an image without bash looks like to the CLI.
	noShell := mcpsession.FakeImage + "-noshell"
	ctxDir := t.TempDir()
	b, err := os.ReadFile(bins.ImageFake)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "fake-cline"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nCOPY fake-cline /usr/local/bin/cline\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("docker", "build", "-q", "-t", noShell, ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v\n%s", noShell, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", noShell).Run() })

	home := t.TempDir()
	p := filepath.Join(home, ".cline", "data", "settings", "providers.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(mcpsession.ProvidersTwo), 0o600); err != nil {
		t.Fatal(err)
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	path := t.TempDir() // git only: no cline on PATH
	if err := os.Symlink(gitPath, filepath.Join(path, "git")); err != nil {
		t.Fatal(err)
	}
	base := []string{"doctor", "--isolation", "docker", "--docker-image", mcpsession.FakeImage, "--docker-network", "none"}
	cases := []struct {
		name    string
		args    []string
		exit    int
		want    []string
		wantFix []string
	}{
		{name: "fake image, no host CLI", exit: 0,
			want: []string{"WARN cline executable", "OK   cline settings", "OK   docker ", "WARN docker network", "OK   cline in image", "OK   shell in image", "WARN git in image", "doctor: all required checks passed"}},
		{name: "missing container network", args: []string{"--docker-network", "container:cline-mcp-doctor-no-such-container", "--docker-egress", "open"}, exit: 1,
			want: []string{"FAIL docker network", "OK   cline in image"}, wantFix: []string{"docker network"}},
		{name: "missing named network", args: []string{"--docker-network", "cline-mcp-doctor-no-such-network"}, exit: 1,
			want: []string{"FAIL docker network"}, wantFix: []string{"docker network"}},
		{name: "wrong --docker-cline", args: []string{"--docker-cline", "/usr/local/bin/no-such-cline"}, exit: 1,
			want: []string{"FAIL cline in image", "OK   shell in image"}, wantFix: []string{"cline in image"}},
		{name: "image without a shell", args: []string{"--docker-image", noShell}, exit: 1,
			want: []string{"OK   cline in image", "FAIL shell in image"}, wantFix: []string{"shell in image"}},
		{name: "egress provider with the proxy image", args: []string{"--docker-network", "bridge", "--docker-egress-image", mcpsession.EgressImage}, exit: 0,
			want: []string{"OK   docker egress      provider: each run reaches only its provider's API"}},
		{name: "egress provider without the proxy image", args: []string{"--docker-network", "bridge", "--docker-egress-image", "cline-mcp/no-such-egress:nope"}, exit: 1,
			want: []string{"FAIL docker egress      provider: the egress proxy image cline-mcp/no-such-egress:nope is missing"}, wantFix: []string{"docker egress"}},
		{name: "egress open warns", args: []string{"--docker-network", "bridge", "--docker-egress", "open"}, exit: 0,
			want: []string{"WARN docker egress      open: containers reach whatever the bridge network reaches"}, wantFix: []string{"docker egress"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bins.ClineMCP, append(append([]string{}, base...), c.args...)...)
			cmd.Env = []string{"HOME=" + home, "PATH=" + path, "TMPDIR=" + t.TempDir()}
			if dh := os.Getenv("DOCKER_HOST"); dh != "" {
				cmd.Env = append(cmd.Env, "DOCKER_HOST="+dh)
			}
			runDoctor(t, cmd, c.exit, c.want, c.wantFix)
		})
	}
	if ids, err := mcpsession.LabelledContainers("cline-mcp.doctor"); err != nil || len(ids) > 0 {
		t.Errorf("the doctor left containers behind: %v (%v)", ids, err)
	}
}
