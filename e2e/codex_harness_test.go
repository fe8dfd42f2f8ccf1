//go:build e2e && linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/netns"
	"github.com/cline-mcp/cline-mcp/internal/npmcache"
)

// codexVersion is the Codex CLI release the suite runs (npm @openai/codex). .ci/run reads it
// from here to install the same release.
const codexVersion = "0.171.0"

// envCodex names a codex binary to use instead of the cached npm install; it must report
// codexVersion.
const envCodex = "CLINE_MCP_CODEX"

var codexInstall struct {
	once sync.Once
	bin  string
	err  error
}

// codexCLI returns the Codex binary, installing it on first use. Without it (no npm, no
// registry, no network namespaces) the test is skipped loudly, and fails under CI=true.
func codexCLI(t *testing.T) string {
	t.Helper()
	codexInstall.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		codexInstall.bin, codexInstall.err = installCodex(ctx)
		if codexInstall.err == nil {
			codexInstall.err = netns.Run(func() error { return nil })
		}
	})
	if err := codexInstall.err; err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but Codex %s cannot run here: %v", codexVersion, err)
		}
		t.Skipf("!!! SKIPPED: Codex %s cannot run here: %v", codexVersion, err)
	}
	return codexInstall.bin
}

// installCodex finds the native binary npm installed into
// ${XDG_CACHE_HOME:-$HOME/.cache}/cline-mcp/codex-<version> (never inside the repository),
// installing it there when missing.
func installCodex(ctx context.Context) (string, error) {
	if bin := os.Getenv(envCodex); bin != "" {
		return bin, checkCodexVersion(ctx, bin)
	}
	dir, err := npmcache.Dir("codex-" + codexVersion)
	if err != nil {
		return "", err
	}
	return npmcache.Install(ctx, dir, "@openai/codex@"+codexVersion, nil, codexBinary)
}

// codexBinary is the native codex of the platform package npm chose
// (node_modules/@openai/codex-<os>-<arch>/vendor/<target>/bin/codex), checked with --version.
func codexBinary(ctx context.Context, prefix string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(prefix, "node_modules", "@openai", "codex-*", "vendor", "*", "bin", "codex"))
	if len(m) != 1 {
		return "", fmt.Errorf("want one platform binary under %s, found %v", prefix, m)
	}
	return m[0], checkCodexVersion(ctx, m[0])
}

func checkCodexVersion(ctx context.Context, bin string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", bin, err)
	}
	if got := strings.TrimSpace(string(out)); got != "codex-cli "+codexVersion {
		return fmt.Errorf("%s is %q, want codex-cli %s", bin, got, codexVersion)
	}
	return nil
}

// codexWorld is a world whose server Codex starts from the entry `cline-mcp setup codex` wrote
// into a private CODEX_HOME.
type codexWorld struct {
	*world
	bin       string
	codexHome string
	serverEnv []string
	serverLog string
}

// codexProvider is what a user has in config.toml before setup: the fake model provider
// (its base_url is set per run with -c) and the environment the suite gives the server (Codex
// passes a server only a few variables of its own environment).
func codexProvider(environ []string) string {
	var b strings.Builder
	b.WriteString("model = \"gpt-fake\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\n" +
		"base_url = \"http://127.0.0.1:9/v1\"\nwire_api = \"responses\"\nenv_key = \"FAKE_OPENAI_KEY\"\n" +
		"request_max_retries = 0\nstream_max_retries = 0\n\n[mcp_servers.cline.env]\n")
	env := envMap(environ)
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, _ := json.Marshal(env[k]) // a JSON string is a TOML basic string
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	return b.String()
}

// newCodexWorld prepares a world and runs `cline-mcp setup codex` with the suite's server
// flags into its CODEX_HOME.
func newCodexWorld(t *testing.T, o worldOpts) *codexWorld {
	t.Helper()
	bin := codexCLI(t)
	w, _, environ := prepareWorld(t, host, o)
	c := &codexWorld{world: w, bin: bin, codexHome: filepath.Join(w.root, "codex-home"), serverEnv: environ,
		serverLog: filepath.Join(w.root, "server.log")}
	if err := os.MkdirAll(c.codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.codexHome, "config.toml"), []byte(codexProvider(environ)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The client's entry carries only per-client flags (setup refuses machine-wide ones such as
	// --stop-grace and the Docker settings): the sessions run on the host with the fake CLI.
	setup := exec.Command(bins.ClineMCP, "setup", "codex", "--cline", bins.FakeCline, "--log-level", "debug", "--log-file", c.serverLog)
	setup.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "CODEX_HOME=" + c.codexHome}
	out, err := setup.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "can call apply_cline_edits without asking") {
		t.Fatalf("setup codex: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if left := w.leaks(); left != "" {
			t.Errorf("leak after Codex exited: %s", left)
		}
	})
	return c
}

// codexRun is what one `codex exec` session left behind.
type codexRun struct {
	api    *fakeResponses
	stdout string // the final message
	stderr string // Codex's log (RUST_LOG below)
	err    error
}

// codexLog is the RUST_LOG of a run: errors and warnings of everything, and the MCP client's
// (rmcp) record of the handshake, in the span of its request (a trace span of codex_rmcp_client).
const codexLog = "warn,rmcp=info,codex_rmcp_client=trace"

// run starts `codex exec` in a private network namespace with the fake Responses API on that
// namespace's loopback, and waits for it to exit.
func (c *codexWorld) run(calls []codexCall) *codexRun {
	t := c.t
	t.Helper()
	r := &codexRun{}
	var stdout, stderr bytes.Buffer
	err := netns.Run(func() error {
		api, err := startFakeResponses(calls)
		if err != nil {
			return err
		}
		defer api.Close()
		r.api = api
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.bin, "exec", "--skip-git-repo-check",
			"-c", fmt.Sprintf("model_providers.fake.base_url=%q", api.URL()), "Use the cline tools as instructed.")
		cmd.Dir = c.work
		cmd.Env = append(append([]string{}, c.serverEnv...), "CODEX_HOME="+c.codexHome,
			"FAKE_OPENAI_KEY=sk-e2e-"+randHex(12), "RUST_LOG="+codexLog, "NO_COLOR=1")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil { // on this thread: the process lives in the namespace
			return err
		}
		r.err = cmd.Wait()
		return nil
	})
	if err != nil {
		t.Fatalf("private network namespace: %v", err)
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("codex stdout:\n%s\ncodex stderr (tail):\n%s\nserver log (tail):\n%s", mcpsession.Tail(r.stdout, 2000),
				mcpsession.Tail(r.stderr, 6000), mcpsession.Tail(c.log(), 4000))
		}
	})
	return r
}

// log is the server's log so far.
func (c *codexWorld) log() string {
	b, _ := os.ReadFile(c.serverLog)
	return string(b)
}

// codexFaults are the lines of Codex's log at level WARN or ERROR (timestamped tracing lines)
// and its plain warnings and errors: none is expected of a healthy session, except
// codexBenign.
var codexFaults = regexp.MustCompile(`(?m)^(\S+Z\s+(WARN|ERROR)\s.*|(?i:warning|error):.*)$`)

// codexBenign are Codex's warnings about the test's own setup, not about the MCP session: no
// bubblewrap on PATH (Codex uses the one it bundles; it sandboxes shell commands, not MCP
// servers), no metadata for the fake model's name, no helper binaries under a CODEX_HOME in the
// temporary directory, and no network for its curated plugin sync (GitHub, chatgpt.com). Also
// Codex's own transcript at the end of `codex exec`: "failed to flush rollout after emitting
// terminal turn event: thread … not found" (the turn's rollout recorder was already closed: a
// race inside Codex on exit, seen in other projects' `codex exec` logs too; its MCP session had
// ended cleanly, and the result is checked on its own).
var codexBenign = regexp.MustCompile(`could not find bubblewrap|Model metadata for .gpt-fake. not found|Unknown model gpt-fake is used|could not create PATH aliases|codex_core_plugins::startup_sync: .*curated plugin sync|codex_core::tasks: failed to flush rollout after emitting terminal turn event: thread \S+ not found$`)

// initialized is rmcp's line once the MCP client finished its handshake, in the span of the
// initialize request, with the protocol version the server answered.
var initialized = regexp.MustCompile(`mcp\.request:initialize:serve_inner: rmcp::service: Service initialized as client.*?protocol_version: ProtocolVersion\("([^"]+)"\)`)

// wantClean asserts a session a user would call healthy: codex exited 0, the MCP session was
// opened with initialize, and Codex logged no warning or error. It returns the protocol version.
func (r *codexRun) wantClean(t *testing.T) string {
	t.Helper()
	if r.err != nil {
		t.Errorf("codex exited with %v", r.err)
	}
	var faults []string
	for _, f := range codexFaults.FindAllString(r.stderr, -1) {
		if !codexBenign.MatchString(f) {
			faults = append(faults, f)
		}
	}
	if len(faults) > 0 {
		t.Errorf("Codex's log reports faults:\n%s", strings.Join(faults, "\n"))
	}
	m := initialized.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Errorf("Codex's log has no completed initialize handshake with the server")
		return ""
	}
	return m[1]
}

// outputs are the tool outputs of the model's last request.
func (r *codexRun) outputs() []inputItem {
	reqs := r.api.Requests()
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1].Body.outputs()
}

// structured is the JSON object in a tool output: Codex 0.171 gives the model
// "Wall time: … seconds\nOutput:\n" and then the JSON of the result's structuredContent.
func structured(t *testing.T, out string) map[string]any {
	t.Helper()
	_, body, ok := strings.Cut(out, "Output:\n")
	if !ok {
		t.Fatalf("the tool output has no Output: section: %.400q", out)
	}
	var sc map[string]any
	if err := json.Unmarshal([]byte(body), &sc); err != nil {
		t.Fatalf("the tool output is not the JSON of structuredContent: %v\n%.400q", err, body)
	}
	return sc
}
