package mcpsession

import (
	"context"
	"errors"
	"fmt"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FakeImage is the tag tests build the fake CLI image under (the Makefile's image-fake builds
// cline-mcp/fake-cline:latest from the same Dockerfile).
var FakeImage = "cline-mcp/fake-cline:" + TestTag("test")

// EgressImage is the tag tests build the egress proxy image under (the Makefile's image-egress
// builds cline-mcp/egress:latest from the same Dockerfile). Servers that run Docker calls with
// --docker-egress provider need --docker-egress-image EgressImage.
var EgressImage = "cline-mcp/egress:" + TestTag("test")

// TestTag is the tag suffix of images the tests build: CLINE_MCP_TEST_TAG when set (so two
// checkouts testing against one engine at once do not overwrite each other's images), else def.
func TestTag(def string) string {
	if t := os.Getenv("CLINE_MCP_TEST_TAG"); t != "" {
		return def + "-" + t
	}
	return def
}

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

// BuildFakeImage builds images/fake-cline with the static fake CLI from b into FakeImage, and
// the egress proxy's image (BuildEgressImage).
func BuildFakeImage(b Binaries) error {
	err := buildImage(FakeImage, "fake-cline", func(ctxDir, _ string) error {
		bin, err := os.ReadFile(b.ImageFake)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(ctxDir, "fake-cline"), bin, 0o755)
	})
	if err != nil {
		return err
	}
	return BuildEgressImage()
}

// BuildEgressImage builds images/egress with the static proxy (cmd/cline-mcp-egress, for the
// engine's architecture) into EgressImage.
func BuildEgressImage() error {
	return buildImage(EgressImage, "egress", func(ctxDir, root string) error {
		return goBuild(root, filepath.Join(ctxDir, "cline-mcp-egress"), "./cmd/cline-mcp-egress", "GOOS=linux", "GOARCH="+EngineArch())
	})
}

// buildImage builds images/<dir>/Dockerfile into tag, in a temporary context that fill puts the
// binaries into.
func buildImage(tag, dir string, fill func(ctxDir, root string) error) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	ctxDir, err := os.MkdirTemp("", dir+"-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ctxDir)
	df, err := os.ReadFile(filepath.Join(root, "images", dir, "Dockerfile"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), df, 0o644); err != nil {
		return err
	}
	if err := fill(ctxDir, root); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "build", "-q", "-t", tag, ctxDir).CombinedOutput(); err != nil {
		return fmt.Errorf("docker build %s: %v\n%s", tag, err, out)
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
func ServerContainers() ([]string, error) { return ServerContainersOn("") }

// ServerContainersOn is ServerContainers on the engine at host (docker -H); "" is the default
// engine.
func ServerContainersOn(host string) ([]string, error) {
	serverPIDsMu.Lock()
	pids := append([]int(nil), serverPIDs...)
	serverPIDsMu.Unlock()
	return containersOf(host, pids...)
}

// ContainersOf lists containers (running or not) started by the cline-mcp servers with these
// pids, recognised by the pid inside their cline-mcp.instance label.
func ContainersOf(pids ...int) ([]string, error) { return containersOf("", pids...) }

func containersOf(host string, pids ...int) ([]string, error) {
	var args []string
	if host != "" {
		args = append(args, "-H", host)
	}
	args = append(args, "ps", "-a", "--filter", "label=cline-mcp.instance", "--format", `{{.ID}} {{.Label "cline-mcp.instance"}}`)
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		return nil, err
	}
	want := map[string]string{} // pid → its start ticks ("": not known)
	for _, p := range pids {
		want[strconv.Itoa(p)] = startOf(p)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		parts := strings.Split(f[1], "-") // <hostname>-<pid>-<start ticks>
		if len(parts) < 3 {
			continue
		}
		if start, ok := want[parts[len(parts)-2]]; ok && (start == "" || start == parts[len(parts)-1]) {
			ids = append(ids, f[0])
		}
	}
	return ids, nil
}

// starts are the start ticks of the server pids asked about, recorded while each process ran:
// after it died its pid may be another process's (pid_max is 32768 on many machines), whose
// containers are not the dead server's.
var (
	startsMu sync.Mutex
	starts   = map[int]string{}
)

// startOf is pid's start ticks: the running process's (recorded), else the last recorded.
func startOf(pid int) string {
	startsMu.Lock()
	defer startsMu.Unlock()
	if st, err := proc.StartTime(pid); err == nil {
		starts[pid] = strconv.FormatUint(st, 10)
	}
	return starts[pid]
}

// FakeImageGit is FakeImage plus the host's git binary and the shared libraries it needs, so
// tests can prove git works (or is stopped) inside the sandbox. The real image has git.
var FakeImageGit = FakeImage + "-git"

// ErrNoHostGitImage: FakeImageGit copies the host's git binary and libraries into a Linux
// image, which only works on a Linux host of the engine's architecture.
var ErrNoHostGitImage = errors.New("the fake image with git is built from the host's own git, which needs a Linux host of the engine's architecture")

// BuildFakeImageWithGit layers /usr/bin/git (found with ldd) onto FakeImage. Elsewhere it
// returns ErrNoHostGitImage and builds nothing.
func BuildFakeImageWithGit() error {
	if runtime.GOOS != "linux" || EngineArch() != runtime.GOARCH {
		return ErrNoHostGitImage
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return err
	}
	ctxDir, err := os.MkdirTemp("", "fake-image-git-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ctxDir)
	out, err := exec.Command("ldd", git).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", git, err)
	}
	files := []string{git}
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				files = append(files, f)
			}
		}
	}
	for _, f := range files {
		real, err := filepath.EvalSymlinks(f)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(real)
		if err != nil {
			return err
		}
		dst := filepath.Join(ctxDir, "rootfs", f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			return err
		}
	}
	df := "FROM " + FakeImage + "\nCOPY rootfs/ /\n"
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if b, err := exec.CommandContext(ctx, "docker", "build", "-q", "-t", FakeImageGit, ctxDir).CombinedOutput(); err != nil {
		return fmt.Errorf("docker build %s: %v\n%s", FakeImageGit, err, b)
	}
	return nil
}

// K8sFakeImage is FakeImage with the Kubernetes executor's in-pod helper (BuildK8sFakeImage).
var K8sFakeImage = "cline-mcp/fake-cline:" + TestTag("k8s")

// BuildK8sFakeImage builds K8sFakeImage: FakeImage (built first) plus cline-mcp-k8s-helper
// (cmd/cline-mcp-k8s-helper) and cline-mcp-egress (the credential sidecar) at
// sandbox/kubernetes's default paths, with images/k8s-fake/Dockerfile.
func BuildK8sFakeImage() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	ctxDir, err := os.MkdirTemp("", "k8s-fake-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ctxDir)
	if err := goBuild(root, filepath.Join(ctxDir, "cline-mcp-k8s-helper"), "./cmd/cline-mcp-k8s-helper", "GOOS=linux", "GOARCH="+EngineArch()); err != nil {
		return err
	}
	if err := goBuild(root, filepath.Join(ctxDir, "cline-mcp-egress"), "./cmd/cline-mcp-egress", "GOOS=linux", "GOARCH="+EngineArch()); err != nil {
		return err
	}
	df := filepath.Join(root, "images", "k8s-fake", "Dockerfile") // the one `make image-k8s-fake` uses
	if out, err := exec.Command("docker", "build", "-q", "-f", df, "--build-arg", "FAKE="+FakeImage, "-t", K8sFakeImage, ctxDir).CombinedOutput(); err != nil {
		return fmt.Errorf("docker build %s: %v\n%s", K8sFakeImage, err, out)
	}
	return nil
}
