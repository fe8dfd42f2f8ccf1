package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

var bins mcpsession.Binaries

// beforeAll and afterAll are filled by build-tagged files (the Docker tests and the e2e suite);
// afterAll gets m.Run's exit code.
var (
	beforeAll []func() error
	afterAll  []func(code int) error
)

// TestMain builds the binaries once for every test of the package. With -short the host tests
// skip (prepareEnv) and nothing is built, unless a build-tagged file registered a setup.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() && len(beforeAll) == 0 {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "cline-mcp-bins-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err = mcpsession.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	for _, f := range beforeAll {
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	for _, f := range afterAll {
		if err := f(code); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// providersBefore is a_text_pong/providers.before.json: what `cline auth` leaves behind.
const providersBefore = `{
  "version": 1,
  "lastUsedProvider": "openai-compatible",
  "modes": {},
  "providers": {
    "openai-compatible": {
      "settings": {
        "apiKey": "sk-test-123",
        "model": "fake-model",
        "baseUrl": "http://127.0.0.1:18080/v1",
        "provider": "openai-compatible"
      },
      "updatedAt": "2026-01-01T00:00:00.000Z",
      "tokenSource": "manual"
    }
  }
}
`

// env is one test's private world: HOME with a Cline settings file, a work dir, and the
// fake CLI's record and state files.
type env struct {
	t         *testing.T
	root      string
	home      string
	work      string
	record    string
	providers string
	sess      *mcpsession.Session
	// hooks are the server's test hooks (CLINE_MCP_TEST_*=value), added to its environment
	hooks []string
}

func newEnv(t *testing.T, args ...string) *env {
	t.Helper()
	e := prepareEnv(t)
	e.start(args...)
	return e
}

// prepareEnv makes an env's directories and settings without starting a server.
func prepareEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: builds and runs the server (skipped with -short)")
	}
	root := t.TempDir()
	e := &env{t: t, root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work"), record: filepath.Join(root, "record.jsonl")}
	e.providers = filepath.Join(e.home, ".cline", "data", "settings", "providers.json")
	for _, d := range []string{e.work, filepath.Dir(e.providers), filepath.Join(root, "state"), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(e.providers, []byte(providersBefore), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// start launches a server over this env's HOME, TMPDIR and work dir.
func (e *env) start(args ...string) { e.startWithEnv(nil, args...) }

// startWithEnv is start with extra environment entries for the server.
func (e *env) startWithEnv(extra []string, args ...string) {
	t := e.t
	argv, environ := e.server(extra, args...)
	sess := mcpsession.Start(t, bins.ClineMCP, mcpsession.Options{Args: argv, Env: environ, Dir: e.work})
	e.sess = sess
	t.Cleanup(func() {
		_, bad := sess.Lines()
		if len(bad) > 0 {
			t.Errorf("server wrote %d non-JSON-RPC line(s) to stdout, first: %q", len(bad), bad[0])
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", sess.Stderr())
		}
	})
}

// server is the argv (flags) and environment of a server over this env.
func (e *env) server(extra []string, args ...string) (argv, environ []string) {
	root := e.root
	environ = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.home,
		"TMPDIR=" + filepath.Join(root, "tmp"),
		"FAKE_CLINE_RECORD=" + e.record,
		"FAKE_CLINE_STATE_DIR=" + filepath.Join(root, "state"),
		"CLINE_MCP_TEST_RETRY_BACKOFF=200ms", // the server's test hook; a later entry in extra wins
	}
	environ = append(append(environ, e.hooks...), extra...)
	base := []string{"--cline", bins.FakeCline, "--stop-grace", "500ms", "--log-level", "debug"}
	return append(base, args...), environ
}

// newEnvLike starts a second server over the same directories (a restart after a crash).
func newEnvLike(t *testing.T, e *env, args ...string) *env {
	e2 := *e
	e2.t = t
	e2.start(args...)
	return &e2
}

func (e *env) call(tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, ok := args["cwd"]; !ok {
		args["cwd"] = e.work
	}
	res := e.sess.Call(ctx, tool, args)
	return res, mcpsession.Structured(e.t, res)
}

// hangingWorkspaceRun starts an ask_cline_workspace call whose CLI never answers, in the
// background, and returns the CLI's invocation once it runs.
func (e *env) hangingWorkspaceRun() mcpsession.Record {
	e.t.Helper()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = e.sess.CallErr(ctx, "ask_cline_workspace", map[string]any{"prompt": "go fake:hang", "cwd": e.work}, nil)
	}()
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(e.records()) == 1 }) {
		e.t.Fatal("the run never started")
	}
	return e.records()[0]
}

func (e *env) records() []mcpsession.Record {
	e.t.Helper()
	return mcpsession.ReadRecords(e.t, e.record)
}

// wantWithheld asserts the contract for a call the client cancelled: the server's log records
// its outcome (kind cancelled, and msg when given) and that its response was withheld, and no
// result of kind cancelled reaches the wire.
func wantWithheld(t *testing.T, s *mcpsession.Session, msg string) {
	t.Helper()
	subs := []string{"kind=cancelled", "response withheld"}
	if msg != "" {
		subs = append(subs, msg)
	}
	if !mcpsession.Eventually(10*time.Second, func() bool {
		l := s.Stderr()
		for _, sub := range subs {
			if !strings.Contains(l, sub) {
				return false
			}
		}
		return true
	}) {
		t.Errorf("the server log does not record the cancelled call (want %q)", subs)
	}
	if w := strings.Join(linesOf(s), ""); strings.Contains(w, `"kind":"cancelled"`) || strings.Contains(w, `\"kind\": \"cancelled\"`) {
		t.Errorf("the cancelled call was answered on the wire")
	}
}

func gitInit(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	run("init", "-q", "-b", "main")
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("add", "-A")
	run("commit", "-q", "-m", "init")
}
