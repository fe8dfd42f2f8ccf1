package mcpsession

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// FakeImage is the tag tests build the fake CLI image under (the Makefile's image-fake builds
// cline-mcp/fake-cline:latest from the same Dockerfile).
const FakeImage = "cline-mcp/fake-cline:test"

// DockerAvailable reports whether a Docker engine answers.
func DockerAvailable() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker info: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// BuildFakeImage builds images/fake-cline with the static fake CLI from b into FakeImage.
func BuildFakeImage(b Binaries) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	ctxDir, err := os.MkdirTemp("", "fake-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ctxDir)
	df, err := os.ReadFile(filepath.Join(root, "images", "fake-cline", "Dockerfile"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), df, 0o644); err != nil {
		return err
	}
	bin, err := os.ReadFile(b.FakeCline)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "fake-cline"), bin, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "build", "-q", "-t", FakeImage, ctxDir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker build: %v\n%s", err, out)
	}
	return nil
}

// LabelledContainers lists containers (running or not) that carry label key (or key=value).
func LabelledContainers(label string) ([]string, error) {
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}
