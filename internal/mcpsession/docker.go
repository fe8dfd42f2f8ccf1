package mcpsession

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

var (
	serverPIDsMu sync.Mutex
	serverPIDs   []int
)

func rememberServer(pid int) {
	serverPIDsMu.Lock()
	serverPIDs = append(serverPIDs, pid)
	serverPIDsMu.Unlock()
}

// ServerContainers lists containers (running or not) started by any server this test process
// launched, recognised by the pid inside their cline-mcp.instance label. Other test packages'
// containers, which run at the same time, are not counted.
func ServerContainers() ([]string, error) {
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label=cline-mcp.instance",
		"--format", `{{.ID}} {{.Label "cline-mcp.instance"}}`).Output()
	if err != nil {
		return nil, err
	}
	serverPIDsMu.Lock()
	pids := map[string]bool{}
	for _, p := range serverPIDs {
		pids[strconv.Itoa(p)] = true
	}
	serverPIDsMu.Unlock()
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		parts := strings.Split(f[1], "-") // <hostname>-<pid>-<start ticks>
		if len(parts) >= 3 && pids[parts[len(parts)-2]] {
			ids = append(ids, f[0])
		}
	}
	return ids, nil
}
