//go:build contract && linux

package contract

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// world is one test's private setup: a fake provider, a HOME whose providers.json points at it
// (what `cline auth --provider openai-compatible ... --baseurl` leaves behind), a git work tree,
// and a cline-mcp server running the real CLI. Every process the server starts carries
// CONTRACT_RUN_TAG=<tag> in its environment, so leftovers can be found in /proc.
type world struct {
	t         *testing.T
	root      string
	home      string
	work      string
	providers string
	tag       string
	prov      *fakeprovider.Provider
	sess      *mcpsession.Session
	docker    bool   // the CLI runs in the real image (see docker_test.go)
	relay     string // docker: the provider container the CLI's containers join
	network   string // docker through the egress proxy: the test's internal network the relay is on
	k8s       *k8sWorld
}

// providersJSON is a_text_pong/providers.before.json with the provider's address filled in.
func providersJSON(baseURL string) map[string]any {
	return map[string]any{
		"version":          1,
		"lastUsedProvider": "openai-compatible",
		"modes":            map[string]any{},
		"providers": map[string]any{
			"openai-compatible": map[string]any{
				"settings": map[string]any{
					"apiKey":   "sk-test-123",
					"model":    "fake-model",
					"baseUrl":  baseURL,
					"provider": "openai-compatible",
				},
				"updatedAt":   "2026-01-01T00:00:00.000Z",
				"tokenSource": "manual",
			},
		},
	}
}

type worldOpt func(*worldCfg)

type worldCfg struct {
	args      []string
	providers func(baseURL string) map[string]any
	docker    bool
	egress    bool
	k8s       bool
	serial    bool
}

func serverArgs(a ...string) worldOpt { return func(c *worldCfg) { c.args = append(c.args, a...) } }

func withProviders(f func(baseURL string) map[string]any) worldOpt {
	return func(c *worldCfg) { c.providers = f }
}

// inDocker runs the world's server with --isolation docker: the real CLI in its image, as
// dockerUID, against the provider behind a relay container (--docker-network container:<relay>).
// Flags in serverArgs come later and win (e.g. another --docker-network).
func inDocker() worldOpt { return func(c *worldCfg) { c.docker = true } }

// throughEgressProxy runs the world's Docker calls with the default --docker-egress provider:
// the relay sits on an internal network the test creates (the proxy's way "out"), the CLI's
// containers have no network (only the proxy's unix socket), and the provider's baseUrl names
// the relay (http://<relay>:18080/v1), from which the server derives the run's only allowed
// endpoint.
func throughEgressProxy() worldOpt {
	return func(c *worldCfg) { c.docker, c.egress = true, true }
}

// alone keeps the test serial: for a test with two worlds, or one that measures time.
func alone() worldOpt { return func(c *worldCfg) { c.serial = true } }

// newWorld starts everything for one test, which runs in parallel with the others.
func newWorld(t *testing.T, respond fakeprovider.Responder, opts ...worldOpt) *world {
	t.Helper()
	cfg := worldCfg{providers: providersJSON}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.docker || cfg.k8s {
		needDocker(t)
	} else {
		needSuite(t)
	}
	if !cfg.serial {
		t.Parallel()
	}
	root := t.TempDir()
	w := &world{t: t, root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work"), tag: randomTag(t), docker: cfg.docker}
	w.providers = filepath.Join(w.home, ".cline", "data", "settings", "providers.json")
	for _, d := range []string{w.work, filepath.Dir(w.providers), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.k8s {
		dir := filepath.Join(root, "provider")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		w.k8s, w.prov = startK8sWorld(t, dir, respond)
	} else if cfg.docker {
		dir := filepath.Join(root, "provider")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		w.relay = "cline-mcp-contract-" + w.tag
		if cfg.egress {
			w.network = createTestNetwork(t, "cline-mcp-contract-net-"+w.tag)
			w.prov = startRelayProvider(t, dir, w.relay, w.network, respond)
		} else {
			w.prov = startRelayProvider(t, dir, w.relay, "none", respond)
		}
	} else {
		prov, err := fakeprovider.Start(respond)
		if err != nil {
			t.Fatal(err)
		}
		w.prov = prov
		t.Cleanup(func() { _ = prov.Close() })
	}
	w.writeJSON(w.providers, cfg.providers(w.prov.BaseURL()))
	gitInit(t, w.work, map[string]string{"README.md": "hello\n"})

	// Registered before the session so it runs after the session's own cleanup (Stop).
	t.Cleanup(func() {
		if left := eventuallyNone(10*time.Second, func() []int { return tagged(w.tag, -1) }); len(left) > 0 {
			t.Errorf("processes of this test outlived the server: %v", describe(left))
		}
		if w.docker && w.sess != nil {
			if left := containersGone(w.sess.Cmd.Process.Pid, 10*time.Second); len(left) > 0 {
				t.Errorf("containers of this test outlived the server: %v", left)
			}
		}
		if w.k8s != nil {
			if left := w.k8s.runPods(); len(left) > 0 {
				t.Errorf("run pods of this test outlived the server: %v", left)
			}
		}
	})
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.home,
		"TMPDIR=" + filepath.Join(root, "tmp"),
		"CONTRACT_RUN_TAG=" + w.tag,
		"CLINE_MCP_TEST_RETRY_BACKOFF=200ms", // the server's test hook for a fast retry
	}
	bin := suite.bins.ClineMCP
	args := []string{"--cline", suite.cli, "--stop-grace", "500ms", "--log-level", "debug"}
	if cfg.k8s {
		args = append(args, w.k8s.args()...)
		env = append(env, "CLINE_MCP_K8S_PULL=Never") // the images are imported on the node
	}
	if cfg.docker {
		args = append(args, "--isolation", "docker", "--docker-image", dockerSuite.image)
		if cfg.egress {
			args = append(args, "--docker-network", w.network, "--docker-egress-image", mcpsession.EgressImage)
		} else {
			args = append(args, "--docker-network", "container:"+w.relay, "--docker-egress", "open")
		}
		// The server runs as a uid no image knows; it owns its home, work tree and temp dir.
		asCaller(t, w.home, w.work, filepath.Join(root, "tmp"))
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(root), 0o755); err != nil {
			t.Fatal(err)
		}
		args = append(append(setprivArgs(t), bin), args...)
		bin = "setpriv"
	}
	args = append(args, cfg.args...)
	w.sess = mcpsession.Start(t, bin, mcpsession.Options{Args: args, Env: env, Dir: w.work})
	t.Cleanup(func() {
		if _, bad := w.sess.Lines(); len(bad) > 0 {
			t.Errorf("server wrote %d non-JSON-RPC line(s) to stdout, first: %q", len(bad), bad[0])
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", mcpsession.Tail(w.sess.Stderr(), 20000))
			for _, r := range w.prov.Requests() {
				t.Logf("provider saw %s %s (chat #%d) %d bytes", r.Method, r.Path, r.Index, len(r.Raw))
			}
		}
	})
	return w
}

// call invokes a tool (cwd defaults to the work tree) and returns the result and its
// structuredContent.
func (w *world) call(tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, ok := args["cwd"]; !ok {
		args["cwd"] = w.work
	}
	res := w.sess.Call(ctx, tool, args)
	return res, mcpsession.Structured(w.t, res)
}

func (w *world) writeJSON(path string, v any) {
	w.t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) readJSON(path string) map[string]any {
	w.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		w.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		w.t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return m
}

// chats returns the provider's chat requests, failing the test when there are not want (want < 0: any).
func (w *world) chats(want int) []fakeprovider.Request {
	w.t.Helper()
	c := w.prov.Chats()
	if want >= 0 && len(c) != want {
		w.t.Fatalf("the provider got %d chat request(s), want %d", len(c), want)
	}
	return c
}

func randomTag(t *testing.T) string { return randomHex() }

// randomHex is 24 random hex digits (crypto/rand never fails on Linux).
func randomHex() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tagged lists the pids (other than except) whose environment carries CONTRACT_RUN_TAG=tag.
func tagged(tag string, except int) []int {
	marker := []byte("CONTRACT_RUN_TAG=" + tag + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == except {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or a zombie
		}
		if bytes.Contains(b, marker) {
			out = append(out, pid)
		}
	}
	return out
}

func describe(pids []int) []string {
	var out []string
	for _, p := range pids {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		out = append(out, strconv.Itoa(p)+": "+strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
	}
	return out
}

// eventuallyNone polls list until it is empty or d passed, and returns the last list.
func eventuallyNone(d time.Duration, list func() []int) []int {
	deadline := time.Now().Add(d)
	for {
		l := list()
		if len(l) == 0 || time.Now().After(deadline) {
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func gitInit(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	git(t, dir, "init", "-q", "-b", "main")
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "init")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	// The Docker worlds' work trees belong to dockerUID; this process is root.
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return string(b)
}

func wantAttempts(t *testing.T, sc map[string]any, n int) {
	t.Helper()
	if got := int(mcpsession.Num(sc, "attempts")); got != n {
		t.Errorf("got attempts %d, want %d", got, n)
	}
}
