//go:build contract && linux

package contract

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// Environment of the inner process for the Docker half of the suite (set by outer).
const (
	envDockerImage = "CLINE_MCP_CONTRACT_IMAGE"      // the real CLI's image (make contract builds it)
	envRelayImage  = "CLINE_MCP_CONTRACT_RELAY"      // the relay image outer built
	envDockerSkip  = "CLINE_MCP_CONTRACT_DOCKERSKIP" // why the Docker half cannot run
	envRunLabel    = "CLINE_MCP_CONTRACT_RUNLABEL"   // label value of this suite run's relay containers
)

// relayPort is where the relay listens inside each provider container's own network namespace.
const relayPort = 18080

// labelContract marks the relay containers of one suite run (value: a random id), so the run
// removes exactly its own.
const labelContract = "cline-mcp.contract"

// dockerUID is the caller the Docker worlds run the server as: a uid no image knows, as a user's
// would be. The files Cline writes must belong to it.
const dockerUID = 4242

var dockerSuite struct {
	image, relay, label, skip string
}

// defaultImage is the real CLI's image `make contract` builds: cline-mcp/cline:contract[-<tag>].
func defaultImage() string { return "cline-mcp/cline:" + mcpsession.TestTag("contract") }

// prepareDocker runs in the outer process: it checks the engine and the real CLI's image and
// builds the relay image (FROM scratch + the static relay). It returns the environment for the
// inner process (a reason to skip goes there too, so the host half still runs) and the label value
// of this run's relay containers.
func prepareDocker(ctx context.Context, dir string) ([]string, string) {
	image := os.Getenv(envDockerImage)
	if image == "" {
		image = defaultImage()
	}
	label := randomHex()
	env := []string{envDockerImage + "=" + image, envRunLabel + "=" + label}
	skip := func(reason string) ([]string, string) { return append(env, envDockerSkip+"="+reason), label }
	if err := mcpsession.DockerAvailable(); err != nil {
		return skip(err.Error())
	}
	if out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Size}}", image).CombinedOutput(); err != nil {
		return skip(fmt.Sprintf("image %s is missing (make contract builds it: make image IMAGE=%s): %s", image, image, strings.TrimSpace(string(out))))
	}
	relay := "cline-mcp/contract-relay:" + mcpsession.TestTag("test")
	if err := buildRelayImage(ctx, dir, relay); err != nil {
		return skip(err.Error())
	}
	if err := mcpsession.BuildEgressImage(); err != nil {
		return skip(err.Error())
	}
	return append(env, envRelayImage+"="+relay), label
}

func buildRelayImage(ctx context.Context, dir, ref string) error {
	ctxDir := filepath.Join(dir, "relay-image")
	if err := os.MkdirAll(ctxDir, 0o755); err != nil {
		return err
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(ctxDir, "relay"), "./fakeprovider/relay")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+mcpsession.EngineArch())
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build relay: %v\n%s", err, out)
	}
	df := "FROM scratch\nCOPY relay /relay\nLABEL org.opencontainers.image.title=cline-mcp-contract-relay\nENTRYPOINT [\"/relay\"]\n"
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "docker", "build", "-q", "-t", ref, ctxDir).CombinedOutput(); err != nil {
		return fmt.Errorf("docker build %s: %v\n%s", ref, err, out)
	}
	return nil
}

// removeRunContainers force-removes the relay containers of this suite run (a test that died
// before its cleanup leaves them).
func removeRunContainers(label string) {
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+labelContract+"="+label).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
	}
	out, _ = exec.Command("docker", "network", "ls", "-q", "--filter", "label="+labelContract+"="+label).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_ = exec.Command("docker", append([]string{"network", "rm"}, ids...)...).Run()
	}
}

func innerDocker() {
	dockerSuite.image = os.Getenv(envDockerImage)
	dockerSuite.relay = os.Getenv(envRelayImage)
	dockerSuite.label = os.Getenv(envRunLabel)
	dockerSuite.skip = os.Getenv(envDockerSkip)
}

// needDocker skips (or, under CI, fails) a test of the Docker half when it cannot run.
func needDocker(t *testing.T) {
	t.Helper()
	needSuite(t)
	if dockerSuite.skip == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the Docker half of the contract suite cannot run: %s", dockerSuite.skip)
	}
	t.Skipf("!!! SKIPPED: the Docker half of the contract suite cannot run: %s", dockerSuite.skip)
}

// startRelayProvider serves the fake provider on a Unix socket in dir and starts its relay in a
// container. With network "none" it listens on 127.0.0.1:relayPort and the CLI's container joins
// it with --docker-network container:<name>; on a network the test created it listens on every
// address there and is reached as <name>:relayPort (through the egress proxy). Both are stopped
// when the test ends.
func startRelayProvider(t *testing.T, dir, name, network string, respond fakeprovider.Responder) *fakeprovider.Provider {
	t.Helper()
	sock := filepath.Join(dir, "provider.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	host, listen := "127.0.0.1", fmt.Sprintf("127.0.0.1:%d", relayPort)
	if network != "none" {
		host, listen = name, fmt.Sprintf(":%d", relayPort)
	}
	prov := fakeprovider.Serve(ln, fmt.Sprintf("http://%s:%d/v1", host, relayPort), respond)
	t.Cleanup(func() { _ = prov.Close() })

	cmd := exec.Command("docker", "run", "--rm", "--name", name, "--label", labelContract+"="+dockerSuite.label,
		"--network", network, "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--log-driver", "none", "-v", dir+":"+dir, dockerSuite.relay,
		"-listen", listen, "-to", sock)
	out := &watchBuffer{needle: []byte("ready "), seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = exec.Command("docker", "rm", "-f", name).Run()
		<-exited
		if t.Failed() {
			t.Logf("relay %s:\n%s", name, out.String())
		}
	})
	select {
	case <-out.seen:
	case err := <-exited:
		t.Fatalf("relay container %s exited: %v\n%s", name, err, out.String())
	case <-time.After(time.Minute):
		t.Fatalf("relay container %s did not start within a minute\n%s", name, out.String())
	}
	return prov
}

// createTestNetwork creates an internal network (no route out) labelled with this suite run, and
// removes it when the test ends — after the server's cleanup, so its egress proxy has left it.
func createTestNetwork(t *testing.T, name string) string {
	t.Helper()
	if out, err := exec.Command("docker", "network", "create", "--internal", "--label", labelContract+"="+dockerSuite.label, name).CombinedOutput(); err != nil {
		t.Fatalf("docker network create %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("docker", "network", "rm", name).CombinedOutput(); err != nil {
			t.Errorf("docker network rm %s (something still on it?): %v\n%s", name, err, out)
		}
	})
	return name
}

// asCaller makes dirs belong to dockerUID, the Docker worlds' caller.
func asCaller(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		err := filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, dockerUID, dockerUID)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// setprivArgs runs the server as dockerUID with the group of the engine's socket, the way a user
// in the docker group runs it.
func setprivArgs(t *testing.T) []string {
	t.Helper()
	var st syscall.Stat_t
	groups := "-"
	if err := syscall.Stat("/var/run/docker.sock", &st); err == nil {
		groups = strconv.Itoa(int(st.Gid))
	}
	args := []string{"--reuid", strconv.Itoa(dockerUID), "--regid", strconv.Itoa(dockerUID)}
	if groups == "-" {
		return append(args, "--clear-groups")
	}
	return append(args, "--groups", groups)
}

// serverContainers lists the containers (running or not) of the server with this pid.
func serverContainers(pid int) []string {
	ids, err := mcpsession.ContainersOf(pid)
	if err != nil {
		return []string{"docker ps: " + err.Error()}
	}
	return ids
}

// containersGone waits up to d for the server's containers to disappear and returns what is left.
func containersGone(pid int, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		left := serverContainers(pid)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}
