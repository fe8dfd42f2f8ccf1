//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/testengine"
)

// engine is a Docker engine the Docker scenarios run against: the default one (bind mounts), a
// private dockerd that cannot see this machine's files (copy mode, found by the probe), or
// Podman (bind mounts, and copy mode when forced).
type engine struct {
	name string
	// host is the engine's address ("" = what the server finds by itself: the default engine).
	host string
	// args are extra server flags (--docker-host, --docker-mounts).
	args []string
	// copy: files are copied in and out, so the analysis tools bring nothing back.
	copy bool
}

var defaultEngine = engine{name: "default"}

// The private engines of this test process; nil with the reason when they cannot run here.
var (
	secondDockerd, podman       *testengine.Engine
	secondDockerdErr, podmanErr error
)

func init() {
	beforeAll = append(beforeAll, func() error {
		if dockerErr != nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		secondDockerd, secondDockerdErr = startPrivate(ctx, testengine.StartDockerd)
		podman, podmanErr = startPrivate(ctx, testengine.StartPodman)
		if os.Getenv("CI") == "true" {
			if err := errors.Join(secondDockerdErr, podmanErr); err != nil {
				return fmt.Errorf("CI=true but a private engine is unavailable: %w", err)
			}
		}
		for name, err := range map[string]error{"the private dockerd (copy mode)": secondDockerdErr, "Podman": podmanErr} {
			if err != nil {
				fmt.Fprintf(os.Stderr, "!!! Docker scenarios against %s will be SKIPPED: %v\n", name, err)
			}
		}
		return nil
	})
	afterAll = append(afterAll, func(int) error {
		var errs []error
		for _, eng := range []*testengine.Engine{secondDockerd, podman} {
			if eng == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			left, err := eng.Leftovers(ctx, "cline-mcp.instance")
			cancel()
			if err == nil && len(left) > 0 {
				err = fmt.Errorf("leak: %s keeps %v", eng.Name, left)
			}
			errs = append(errs, err, eng.Stop())
		}
		return errors.Join(errs...)
	})
}

// startPrivate starts an engine and loads the fake images into it.
func startPrivate(ctx context.Context, start func(context.Context) (*testengine.Engine, error)) (*testengine.Engine, error) {
	eng, err := start(ctx)
	if err != nil {
		return nil, err
	}
	images := []string{mcpsession.FakeImage}
	if gitImageErr == nil {
		images = append(images, mcpsession.FakeImageGit)
	}
	for _, img := range images {
		if err := eng.LoadImage(ctx, img); err != nil {
			return nil, errors.Join(err, eng.Stop())
		}
	}
	return eng, nil
}

func (eng engine) containers() ([]string, error) { return mcpsession.ServerContainersOn(eng.host) }

// newEngineEnv starts a server for the Docker scenarios on eng, with the fake image and no
// network.
func newEngineEnv(t *testing.T, eng engine, args ...string) *env {
	t.Helper()
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	base := append([]string{"--docker-image", mcpsession.FakeImage, "--docker-network", "none"}, eng.args...)
	return newEnv(t, append(base, args...)...)
}

// private returns the engine description of a private engine, or skips loudly (CI=true has
// failed the suite already when it is missing).
func private(t *testing.T, eng *testengine.Engine, err error, copyMode bool, args ...string) engine {
	t.Helper()
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	if eng == nil {
		t.Skipf("!!! SKIPPED: %v", err)
	}
	return engine{name: eng.Name, host: eng.Host, args: append([]string{"--docker-host", eng.Host}, args...), copy: copyMode}
}

type engineScenario struct {
	name string
	run  func(*testing.T, engine)
}

// allTools are the Docker scenarios of the three tools, the settings merge, the cleanup and a
// warm container's call.
var allTools = []engineScenario{
	{"ask", testDockerAskCline},
	{"ask cannot write cwd", testDockerAskClineCannotWriteCwd},
	{"apply edits and ownership", testDockerApplyEditsAndOwnership},
	{"apply cannot commit", testDockerApplyCannotCommit},
	{"workspace", testDockerWorkspace},
	{"override keeps no token", testDockerOverrideKeepsNeitherTokenNorTrackedFields},
	{"timeout and cancel leave nothing", testDockerTimeoutAndCancelLeaveNothing},
	{"escape probes", testDockerEscapeProbes},
	{"git inside the sandbox", testDockerGitInsideTheSandbox},
	{"warm call", testDockerWarmCall},
}

func runScenarios(t *testing.T, eng engine, list []engineScenario) {
	for _, sc := range list {
		t.Run(sc.name, func(t *testing.T) {
			sc.run(t, eng)
			left, err := eng.containers()
			if err != nil || len(left) > 0 {
				t.Errorf("containers left on %s: %v %v", eng.name, left, err)
			}
		})
	}
}

// TestCopyEngine runs every Docker scenario against a dockerd that cannot see this machine's
// files: the server must find that out by itself (no --docker-mounts) and copy.
func TestCopyEngine(t *testing.T) {
	eng := private(t, secondDockerd, secondDockerdErr, true)
	runScenarios(t, eng, allTools)
	e := newEngineEnv(t, eng)
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantDockerOK(t, sc)
	if log := e.sess.Stderr(); !strings.Contains(log, "host="+eng.host) {
		t.Errorf("the server did not log the engine it uses:\n%s", log)
	}
}

// TestCopyEngineThroughContext: no flag, no DOCKER_HOST — a Docker config whose current context
// (made by the real docker CLI) points at the private dockerd leads the server there.
func TestCopyEngineThroughContext(t *testing.T) {
	eng := private(t, secondDockerd, secondDockerdErr, true)
	cfg := t.TempDir()
	for _, args := range [][]string{{"context", "create", "private", "--docker", "host=" + eng.host}, {"context", "use", "private"}} {
		cmd := exec.Command("docker", args...)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+cfg)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	e.sess.Stop()
	e.startWithEnv([]string{"DOCKER_CONFIG=" + cfg}, "--docker-image", mcpsession.FakeImage, "--docker-network", "none")
	sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Edit fake:edit_many?modify=README.md&create=via_context.txt"})
	wantDockerOK(t, sc)
	if files := mcpsession.ChangedFiles(sc); files["via_context.txt"] != "A" || files["README.md"] != "M" {
		t.Errorf("got changed files %v, want the edits copied back", files)
	}
	log := e.sess.Stderr()
	if !strings.Contains(log, "host="+eng.host) || !strings.Contains(log, "current context private") {
		t.Errorf("the server did not use the context's engine:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(e.work, "via_context.txt")); err != nil {
		t.Errorf("the created file is not in the checkout: %v", err)
	}
}

// TestPodman runs the scenarios against Podman's Docker-compatible API: it sees this machine's
// files, so directories are bind-mounted.
func TestPodman(t *testing.T) {
	runScenarios(t, private(t, podman, podmanErr, false), allTools)
}

// TestPodmanCopy forces copy mode on Podman, whose archive API differs from Docker's (entry
// names, volumes of a container that is not running).
func TestPodmanCopy(t *testing.T) {
	eng := private(t, podman, podmanErr, true, "--docker-mounts", "copy")
	runScenarios(t, eng, []engineScenario{
		{"ask", testDockerAskCline},
		{"apply edits and ownership", testDockerApplyEditsAndOwnership},
		{"apply cannot commit", testDockerApplyCannotCommit},
		{"workspace", testDockerWorkspace},
		{"override keeps no token", testDockerOverrideKeepsNeitherTokenNorTrackedFields},
		{"git inside the sandbox", testDockerGitInsideTheSandbox},
		{"warm call", testDockerWarmCall},
	})
}

// testDockerWarmCall: with --docker-warm 1 the second ask_cline runs in the container the first
// made ready — on an engine that copies the files too (its slot a volume, its checkout the kept
// volume) — answers as a cold call does, leaves the user's settings as they were and no settings
// copy; the used container is gone and another is ready.
func testDockerWarmCall(t *testing.T, eng engine) {
	e := newEngineEnv(t, eng, "--docker-warm", "1")
	warm := func() []string {
		args := []string{"ps", "-aq", "--no-trunc", "--filter", "label=cline-mcp.role=warm"}
		if eng.host != "" {
			args = append([]string{"-H", eng.host}, args...)
		}
		out, err := exec.Command("docker", args...).Output()
		if err != nil {
			t.Fatal(err)
		}
		mine, _ := eng.containers()
		var ids []string
		for _, id := range strings.Fields(string(out)) {
			for _, m := range mine {
				if strings.HasPrefix(id, m) || strings.HasPrefix(m, id) {
					ids = append(ids, id)
				}
			}
		}
		return ids
	}
	running := func(id string) bool {
		args := []string{"inspect", "-f", "{{.State.Running}}", id}
		if eng.host != "" {
			args = append([]string{"-H", eng.host}, args...)
		}
		out, _ := exec.Command("docker", args...).Output()
		return strings.TrimSpace(string(out)) == "true"
	}
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantDockerOK(t, sc)
	if !mcpsession.Eventually(30*time.Second, func() bool { ids := warm(); return len(ids) == 1 && running(ids[0]) }) {
		t.Fatalf("no warm container on %s after the first call: %v", eng.name, warm())
	}
	first := warm()[0]
	// Running is seen a moment before the server counts it ready: a call in that moment runs
	// cold, the next one takes it.
	ranIn := ""
	for range 3 {
		if ranIn = hostOfCall(t, e); strings.HasPrefix(first, ranIn) {
			break
		}
	}
	if !strings.HasPrefix(first, ranIn) {
		t.Fatalf("the calls after the first ran in %q, not in the warm container %s", ranIn, first)
	}
	if !mcpsession.Eventually(30*time.Second, func() bool { ids := warm(); return len(ids) == 1 && ids[0] != first }) {
		t.Fatalf("the warm container %s on %s was not used and replaced: %v", first, eng.name, warm())
	}
	if got, _ := os.ReadFile(e.providers); string(got) != providersBefore {
		t.Errorf("providers.json changed by a warm call: %s", got)
	}
	if left := callTemps(e); len(left) > 0 {
		t.Errorf("private settings copies left behind: %v", left)
	}
	e.sess.Stop() // its ready container goes with it
}

// hostOfCall is the host name of the container an ask_cline call of e ran in (the fake CLI
// reads /etc/hostname: a container's id begins with it).
func hostOfCall(t *testing.T, e *env) string {
	t.Helper()
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Probe fake:probe_read?path=/etc/hostname"})
	wantDockerOK(t, sc)
	var rep map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil || rep["ok"] != true {
		t.Fatalf("hostname probe %q: %v", sc["text"], err)
	}
	h := strings.TrimSpace(mcpsession.Str(rep, "head"))
	if h == "" {
		t.Fatalf("hostname probe: empty host name in %v", rep)
	}
	return h
}
