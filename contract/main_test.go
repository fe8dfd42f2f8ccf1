//go:build contract && linux

package contract

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/netns"
	"github.com/cline-mcp/cline-mcp/internal/testcluster"
)

// clineVersion is the CLI release the recordings were made with and the suite pins.
const clineVersion = "3.0.65"

// Environment of the re-executed test binary inside the private network namespace.
const (
	envInner = "CLINE_MCP_CONTRACT_INNER" // "1" in the child
	envCLI   = "CLINE_MCP_CONTRACT_CLI"   // the platform binary of the installed CLI
	envBins  = "CLINE_MCP_CONTRACT_BINS"  // directory with the built cline-mcp and fake-cline
	// envCache overrides the install directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/cline-mcp/cline-<version>).
	envCache = "CLINE_MCP_CONTRACT_CACHE"
)

// suite is what TestMain prepared; skip is set when the real CLI cannot run here.
var suite struct {
	cli  string
	bins mcpsession.Binaries
	skip string
}

// TestMain installs the CLI and builds the binaries with the network available, then re-runs
// this test binary in a new network namespace that has only loopback, where every test, the
// fake provider, the server and the real CLI live: nothing the CLI does can leave the machine
// (it looks up telemetry hosts on every run).
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(envInner) == "1" {
		os.Exit(inner(m))
	}
	os.Exit(outer(m))
}

func outer(m *testing.M) int {
	start := time.Now()
	dir, err := os.MkdirTemp("", "cline-mcp-contract-bins-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if _, err := mcpsession.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The MCP server a user configures in Cline (policy_test.go).
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "mcpwriter"), "./mcpwriter")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build mcpwriter: %v\n%s", err, out)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	cli, err := installCLI(ctx)
	cancel()
	if err != nil {
		return unavailable(m, fmt.Sprintf("the real Cline CLI %s is not available: %v", clineVersion, err))
	}
	fmt.Fprintf(os.Stderr, "contract: Cline CLI %s at %s (setup %.1fs)\n", clineVersion, cli, time.Since(start).Seconds())
	// The Docker worlds run the server as an unprivileged uid: it must be able to run it.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	denv, label := prepareDocker(dctx, dir)
	dcancel()
	for _, e := range denv {
		if r, ok := strings.CutPrefix(e, envDockerSkip+"="); ok {
			fmt.Fprintf(os.Stderr, "contract: the Docker half will not run: %s\n", r)
		}
	}
	defer removeRunContainers(label)

	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(append(os.Environ(), envInner+"=1", envCLI+"="+cli, envBins+"="+dir), denv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Pdeathsig fires when the starting OS thread exits: keep this goroutine on its thread.
	runtime.LockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	// go test's own interrupt reaches the whole process group; the child handles it.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		return unavailable(m, fmt.Sprintf("cannot start the suite in a private network namespace (unshare CLONE_NEWNET needs root or CAP_SYS_ADMIN): %v", err))
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() < 0 {
			fmt.Fprintf(os.Stderr, "contract: the suite process died: %v\n", err)
			return 1
		}
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func inner(m *testing.M) int {
	suite.cli = os.Getenv(envCLI)
	dir := os.Getenv(envBins)
	suite.bins = mcpsession.Binaries{Dir: dir, ClineMCP: filepath.Join(dir, "cline-mcp"), FakeCline: filepath.Join(dir, "fake-cline")}
	innerDocker()
	if err := netns.LoopbackUp(); err != nil {
		return unavailable(m, fmt.Sprintf("cannot bring up loopback in the private network namespace: %v", err))
	}
	code := m.Run()
	testcluster.Stop() // the Kubernetes half's cluster, when one was started
	return code
}

// unavailable reports loudly that the suite cannot run. Under CI=true that is a failure;
// otherwise every test is skipped with the reason.
func unavailable(m *testing.M, reason string) int {
	bar := strings.Repeat("=", 78)
	if os.Getenv("CI") == "true" {
		fmt.Fprintf(os.Stderr, "%s\ncontract: FAIL (CI=true): %s\n%s\n", bar, reason, bar)
		return 1
	}
	banner := fmt.Sprintf("%s\ncontract: SKIPPING THE WHOLE CONTRACT SUITE: %s\n(under CI=true this is a failure)\n%s\n", bar, reason, bar)
	fmt.Fprint(os.Stderr, banner)
	// go test hides the output of a passing package unless -v is given: tell the terminal too.
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprint(tty, banner)
		tty.Close()
	}
	suite.skip = reason
	return m.Run()
}

// needSuite skips (or, under CI, fails) a test when TestMain could not prepare the suite.
func needSuite(t *testing.T) {
	t.Helper()
	if suite.skip == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("contract suite unavailable: %s", suite.skip)
	}
	t.Skipf("contract suite unavailable: %s", suite.skip)
}
