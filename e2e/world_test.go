//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// Isolation columns of the matrix.
const (
	host   = "host"
	docker = "docker"
)

var isolations = []string{host, docker}

// world is one server process with its private HOME (Cline settings), TMPDIR, work dir and the
// fake CLI's record file. Its cleanup stops the server and checks for leaks.
type world struct {
	t         testing.TB
	iso       string
	root      string
	home      string
	work      string
	tmp       string
	record    string
	providers string
	tag       string // E2E_RUN_TAG value: every process the server starts carries it
	lastText  string // text content of the last call's result
	sess      *mcpsession.Session
}

// worldOpts are the per-scenario knobs of a server.
type worldOpts struct {
	args       []string // extra server flags
	env        []string // extra server environment
	floor      string   // --isolation of the server; default: the column's isolation
	needDocker bool     // the cell needs an engine even in the host column
}

func newWorld(t testing.TB, iso string, o worldOpts) *world {
	t.Helper()
	w, args, environ := prepareWorld(t, iso, o)
	w.sess = mcpsession.Start(t, bins.ClineMCP, mcpsession.Options{Args: args, Env: environ, Dir: w.work})
	t.Cleanup(w.close)
	return w
}

// prepareWorld makes a world's directories and returns the server's argv and environment
// without starting it (for clients other than mcp-go).
func prepareWorld(t testing.TB, iso string, o worldOpts) (*world, []string, []string) {
	t.Helper()
	if (iso == docker || o.needDocker) && dockerErr != nil {
		t.Skipf("!!! SKIPPED (Docker column): no Docker engine: %v", dockerErr)
	}
	root, err := os.MkdirTemp(suiteRoot, "w-")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, iso: iso, root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work"),
		tmp: filepath.Join(root, "tmp"), record: filepath.Join(root, "record.jsonl"), tag: randHex(8)}
	w.providers = filepath.Join(w.home, ".cline", "data", "settings", "providers.json")
	for _, d := range []string{w.work, filepath.Dir(w.providers), filepath.Join(root, "state"), w.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.writeProviders(mcpsession.ProvidersTwo)
	environ := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.home,
		"TMPDIR=" + w.tmp,
		"FAKE_CLINE_RECORD=" + w.record,
		"FAKE_CLINE_STATE_DIR=" + filepath.Join(root, "state"),
		"E2E_RUN_TAG=" + w.tag,
		"E2E_SUITE=" + suiteTag,
		"CLINE_MCP_TEST_RETRY_BACKOFF=200ms", // the server's test hook; a later entry of o.env wins
	}
	if dh := os.Getenv("DOCKER_HOST"); dh != "" {
		environ = append(environ, "DOCKER_HOST="+dh)
	}
	environ = append(environ, o.env...)
	args := []string{"--cline", bins.FakeCline, "--stop-grace", "500ms", "--log-level", "debug",
		"--docker-image", fakeImage, "--docker-network", "none", "--docker-env", "E2E_RUN_TAG", "--docker-env", "E2E_SUITE"}
	floor := iso
	if o.floor != "" {
		floor = o.floor
	}
	args = append(args, "--isolation", floor)
	args = append(args, o.args...)
	return w, args, environ
}

// close stops the server and fails the test on anything it left behind.
func (w *world) close() {
	t := w.t
	clean := w.sess.Stop()
	if !clean {
		t.Errorf("the server did not exit cleanly when stdin closed")
	}
	if _, bad := w.sess.Lines(); len(bad) > 0 {
		t.Errorf("the server wrote %d non-JSON-RPC line(s) to stdout, first: %.200q", len(bad), bad[0])
	}
	if left := w.leaks(); left != "" {
		t.Errorf("leak: %s", left)
	}
	if t.Failed() {
		t.Logf("server stderr (tail):\n%s", mcpsession.Tail(w.sess.Stderr(), 6000))
	}
}

// leaks reports processes, containers, settings copies and worktrees this world left, waiting
// briefly for asynchronous teardown (container removal, a killed group being reaped).
func (w *world) leaks() string {
	var left string
	mcpsession.Eventually(15*time.Second, func() bool {
		var parts []string
		if pids := mcpsession.ProcsWithEnv("E2E_RUN_TAG=" + w.tag); len(pids) > 0 {
			parts = append(parts, fmt.Sprintf("processes %v (%s)", pids, cmdlines(pids)))
		}
		if m, _ := filepath.Glob(filepath.Join(w.tmp, "cline-mcp-call-*")); len(m) > 0 {
			parts = append(parts, fmt.Sprintf("settings copies %v", m))
		}
		if m, _ := filepath.Glob(filepath.Join(w.tmp, "cline-mcp-worktrees", "*")); len(m) > 0 {
			parts = append(parts, fmt.Sprintf("worktree dirs %v", m))
		}
		for _, repo := range reposUnder(w.root) {
			if wts, err := worktrees(repo); err == nil && len(wts) > 1 {
				parts = append(parts, fmt.Sprintf("worktrees of %s: %v", repo, wts[1:]))
			}
		}
		if dockerErr == nil && w.sess != nil && w.sess.Cmd.Process != nil {
			ids, _ := mcpsession.Containers("label=cline-mcp.run", "ancestor="+fakeImage)
			for _, id := range ids {
				if strings.Contains(containerInstance(id), fmt.Sprintf("-%d-", w.sess.Cmd.Process.Pid)) {
					parts = append(parts, "container "+id)
				}
			}
		}
		left = strings.Join(parts, "; ")
		return left == ""
	})
	return left
}

// containerHasEnv reports whether a container's environment has the entry kv (false when the
// container is gone).
func containerHasEnv(id, kv string) bool {
	out, err := exec.Command("docker", "inspect", "--format", `{{range .Config.Env}}{{println .}}{{end}}`, id).Output()
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l == kv {
			return true
		}
	}
	return false
}

func containerInstance(id string) string {
	out, _ := exec.Command("docker", "inspect", "--format", `{{index .Config.Labels "cline-mcp.instance"}}`, id).Output()
	return strings.TrimSpace(string(out))
}

func cmdlines(pids []int) string {
	var out []string
	for _, p := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		out = append(out, strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
	}
	return strings.Join(out, " | ")
}

// args fills the defaults of a call: cwd = the world's work dir.
func (w *world) args(a map[string]any) map[string]any {
	if _, ok := a["cwd"]; !ok {
		a["cwd"] = w.work
	}
	return a
}

// call runs a tool to completion and returns its structuredContent.
func (w *world) call(tool string, a map[string]any) (*mcp.CallToolResult, map[string]any) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := w.sess.CallErr(ctx, tool, w.args(a), nil)
	if err != nil {
		w.t.Fatalf("call %s: %v", tool, err)
	}
	w.lastText = mcpsession.Text(res)
	return res, mcpsession.Structured(w.t, res)
}

// callAsync starts a call with a progress token; the returned channel yields its error.
func (w *world) callAsync(ctx context.Context, tool string, a map[string]any, token any) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := w.sess.CallErr(ctx, tool, w.args(a), token)
		done <- err
	}()
	return done
}

// running waits until a process started by this server (host or container) exists.
func (w *world) running(d time.Duration) bool {
	self := w.sess.Cmd.Process.Pid
	return mcpsession.Eventually(d, func() bool {
		for _, p := range mcpsession.ProcsWithEnv("E2E_RUN_TAG=" + w.tag) {
			if p != self {
				return true
			}
		}
		return false
	})
}

// wire is everything the server wrote to stdout so far.
func (w *world) wire() string {
	all, _ := w.sess.Lines()
	return strings.Join(all, "")
}

func (w *world) writeProviders(s string) {
	w.t.Helper()
	mcpsession.WriteSettings(w.t, w.providers, s)
}

func (w *world) readProviders() map[string]any {
	w.t.Helper()
	return mcpsession.ReadJSON(w.t, w.providers)
}

func (w *world) records() []mcpsession.Record {
	w.t.Helper()
	return mcpsession.ReadRecords(w.t, w.record)
}

// repo makes a git repository under the world (registered for the leak checks).
func (w *world) repo(name string, files map[string]string) string {
	w.t.Helper()
	dir := filepath.Join(w.root, "repos", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	registerRepo(dir)
	gitRun(w.t, dir, "init", "-q", "-b", "main")
	if files == nil {
		return dir // no commit: an unborn HEAD
	}
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	gitRun(w.t, dir, "add", "-A")
	gitRun(w.t, dir, "commit", "-q", "-m", "init")
	return dir
}

var (
	reposMu sync.Mutex
	repos   []string
)

func registerRepo(dir string) {
	reposMu.Lock()
	repos = append(repos, dir)
	reposMu.Unlock()
}

func allRepos() []string {
	reposMu.Lock()
	defer reposMu.Unlock()
	var out []string
	for _, r := range repos {
		if _, err := os.Stat(r); err == nil {
			out = append(out, r)
		}
	}
	return out
}

func reposUnder(root string) []string {
	var out []string
	for _, r := range allRepos() {
		if strings.HasPrefix(r, root+string(filepath.Separator)) {
			out = append(out, r)
		}
	}
	return out
}

func gitRun(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

func gitCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1")
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// worktrees lists `git worktree list` paths; the first is the main worktree.
func worktrees(repo string) ([]string, error) {
	out, err := gitCmd(repo, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var wts []string
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			wts = append(wts, p)
		}
	}
	return wts, nil
}

func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Dir(wd), nil // go test runs in the package dir, e2e/
}

func num(m map[string]any, k string) int {
	f, _ := m[k].(float64)
	return int(f)
}

// wantResult asserts ok (kind == "") or a failure of kind, with the attempt count when > 0.
func wantResult(t testing.TB, res *mcp.CallToolResult, sc map[string]any, kind string, attempts int) {
	t.Helper()
	if kind == "" {
		if res.IsError || sc["ok"] != true {
			t.Fatalf("got failure %s: %s, want ok", mcpsession.Str(sc, "kind"), mcpsession.Str(sc, "message"))
		}
	} else {
		if !res.IsError || sc["ok"] != false {
			t.Fatalf("got ok result (text %q), want kind %s", mcpsession.Str(sc, "text"), kind)
		}
		if got := mcpsession.Str(sc, "kind"); got != kind {
			t.Fatalf("got kind %q (message %q), want %q", got, mcpsession.Str(sc, "message"), kind)
		}
	}
	if attempts > 0 && num(sc, "attempts") != attempts {
		t.Errorf("got attempts %d, want %d", num(sc, "attempts"), attempts)
	}
}

// wantIsolation asserts where every attempt ran.
func wantIsolation(t testing.TB, sc map[string]any, attempts ...string) {
	t.Helper()
	got := fmt.Sprint(sc["attemptIsolation"])
	if want := fmt.Sprint(attempts); got != want {
		t.Errorf("got attemptIsolation %s, want %s", got, want)
	}
}

func warningsContain(sc map[string]any, sub string) bool {
	ws, _ := sc["warnings"].([]any)
	for _, w := range ws {
		if s, _ := w.(string); strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
