//go:build e2e

package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// testImage is built once by TestMain from testdata/probe.
// testImage is per checkout when CLINE_MCP_TEST_TAG is set (two checkouts sharing an engine).
var testImage = "cline-mcp/docker-test:probe" + os.Getenv("CLINE_MCP_TEST_TAG")

// probePath is the probe's path inside testImage.
const probePath = "/usr/local/bin/probe"

// testLabel marks every container the e2e tests cause, so leaks can be found by label. It is per
// checkout (CLINE_MCP_TEST_TAG) like the image: two checkouts testing on one engine must not count
// (or remove) each other's containers.
var testLabel = "cline-mcp.test" + tagSuffix()

func tagSuffix() string {
	if t := os.Getenv("CLINE_MCP_TEST_TAG"); t != "" {
		return "." + t
	}
	return ""
}

var (
	engineErr error          // why the engine is unusable; nil when it answers
	rawCli    *client.Client // for set-up and leak checks, not for the code under test
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	home, _ := os.UserHomeDir()
	ep, err := engine.Discover(engine.Lookup{Getenv: os.Getenv, Home: home})
	var cli *client.Client
	if err == nil {
		cli, err = engine.NewClient(ep)
	}
	if err == nil {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
		pcancel()
	}
	if err != nil {
		engineErr = fmt.Errorf("docker engine unreachable (%s from %s): %w", ep.Host, ep.Source, err)
		return m.Run()
	}
	rawCli = cli
	defer cli.Close()
	if err := buildProbeImage(ctx, cli); err != nil {
		fmt.Fprintln(os.Stderr, "build test image:", err)
		return 1
	}
	code := m.Run()
	// Prove nothing leaked: no container any test caused may remain.
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", testLabel)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "leak check:", err)
		return 1
	}
	if n := len(list.Items); n > 0 {
		fmt.Fprintf(os.Stderr, "leak check: %d labelled test containers left behind\n", n)
		for _, c := range list.Items {
			_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
		}
		return 1
	}
	_, _ = cli.ImageRemove(ctx, testImage, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	// Built once for every test that needs it (needFakeImage), removed only here.
	_, _ = cli.ImageRemove(ctx, fakeImage, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	return code
}

// requireEngine skips (loudly) without an engine, or fails under CI=true: a CI job that cannot
// reach Docker must not pass by skipping everything.
func requireEngine(tb testing.TB) {
	tb.Helper()
	if engineErr == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("CI=true and %v: the e2e tests need a running Docker engine", engineErr)
	}
	tb.Skipf("!!! SKIPPED: %v — start Docker to run the sandbox/docker e2e tests", engineErr)
}

// buildProbeImage compiles testdata/probe statically and builds a scratch image from it through
// the engine API (no docker CLI, no registry).
func buildProbeImage(ctx context.Context, cli *client.Client) error {
	dir, err := os.MkdirTemp("", "probe-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "probe")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./testdata/probe")
	v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return err
	}
	// The image runs on the engine: Linux, the engine's architecture, whatever the host is.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+v.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build probe: %w\n%s", err, out)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	dockerfile := "FROM scratch\nCOPY probe " + probePath + "\nLABEL org.opencontainers.image.title=cline-mcp-docker-test\n"
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, []byte(dockerfile)}, {"probe", 0o755, exe}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	res, err := cli.ImageBuild(ctx, &ctxTar, client.ImageBuildOptions{
		Tags: []string{testImage}, Remove: true, ForceRemove: true, Dockerfile: "Dockerfile",
	})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var msg struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Error != "" {
			return fmt.Errorf("image build: %s", msg.Error)
		}
	}
	return sc.Err()
}

// newTestExecutor returns an executor on the test image; each test gets its own instance id.
func newTestExecutor(tb testing.TB, opts ...Option) *Executor {
	tb.Helper()
	requireEngine(tb)
	e, err := New(append([]Option{WithImage(testImage), WithEndpoint(testEndpoint(tb))}, opts...)...)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = e.Close() })
	return e
}

// testEndpoint is the engine the environment names, found as the server finds it.
func testEndpoint(tb testing.TB) engine.Endpoint {
	tb.Helper()
	home, _ := os.UserHomeDir()
	ep, err := engine.Discover(engine.Lookup{Getenv: os.Getenv, Home: home})
	if err != nil {
		tb.Fatalf("Discover: %v", err)
	}
	return ep
}

// probeSpec is a Spec running the probe with steps, labelled for the leak check.
func probeSpec(tb testing.TB, steps ...string) (spec sandbox.Spec, out, errOut *watchBuffer) {
	tb.Helper()
	out, errOut = newWatchBuffer(), newWatchBuffer()
	spec = sandbox.Spec{
		Path:   probePath,
		Args:   steps,
		Env:    []string{"PROBE=1"},
		Stdout: out,
		Stderr: errOut,
		Labels: map[string]string{testLabel: tb.Name()},
	}
	return spec, out, errOut
}

// watchBuffer collects a stream and lets a test wait for a line without sleeping.
type watchBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	waiters map[string]chan struct{}
}

func newWatchBuffer() *watchBuffer { return &watchBuffer{waiters: map[string]chan struct{}{}} }

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for s, ch := range w.waiters {
		if strings.Contains(w.buf.String(), s) {
			close(ch)
			delete(w.waiters, s)
		}
	}
	return len(p), nil
}

// seen returns a channel closed once the stream contains s.
func (w *watchBuffer) seen(s string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(w.buf.String(), s) {
		close(ch)
		return ch
	}
	w.waiters[s] = ch
	return ch
}

func (w *watchBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// labelledContainers counts the containers (any state) carrying label key=value.
func labelledContainers(tb testing.TB, key, value string) int {
	tb.Helper()
	f := key
	if value != "" {
		f += "=" + value
	}
	list, err := rawCli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", f)})
	if err != nil {
		tb.Fatalf("container list: %v", err)
	}
	return len(list.Items)
}

// bridgeGateway is the host's address on the default bridge network, reachable from a container
// that has a network.
func bridgeGateway(tb testing.TB) string {
	tb.Helper()
	res, err := rawCli.NetworkInspect(context.Background(), "bridge", client.NetworkInspectOptions{})
	if err != nil {
		tb.Fatalf("network inspect bridge: %v", err)
	}
	for _, c := range res.Network.IPAM.Config {
		if c.Gateway.IsValid() {
			return c.Gateway.String()
		}
		if c.Subnet.IsValid() && c.Subnet.Addr().Is4() {
			return c.Subnet.Masked().Addr().Next().String()
		}
	}
	tb.Fatalf("network inspect bridge: no IPv4 gateway in %+v", res.Network.IPAM)
	return ""
}

// listenAll accepts TCP connections on all interfaces until the test ends; it returns the
// listener's address.
func listenAll(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}
