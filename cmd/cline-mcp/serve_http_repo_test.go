package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/service"
)

// checkoutInner stands in for the runner: it reads README.md and HEAD of the call's cwd (the
// service's checkout) and reports them as a review finding.
type checkoutInner struct {
	calls atomic.Int32
	mu    sync.Mutex
	cwds  []string
}

func (f *checkoutInner) Do(_ context.Context, call run.Call, _ run.Progress) run.Result {
	f.calls.Add(1)
	f.mu.Lock()
	f.cwds = append(f.cwds, call.Cwd)
	f.mu.Unlock()
	readme, err := os.ReadFile(filepath.Join(call.Cwd, "README.md"))
	if err != nil {
		return run.Result{Kind: "launch_failed", Message: err.Error()}
	}
	head, err := exec.Command("git", "-C", call.Cwd, "rev-parse", "HEAD").Output()
	if err != nil {
		return run.Result{Kind: "launch_failed", Message: err.Error()}
	}
	return run.Result{OK: true, Text: "reviewed", Attempts: 1, Review: &review.Report{Target: call.Target, Head: strings.TrimSpace(string(head)),
		Files: []review.FileStat{}, Findings: []review.Finding{{Severity: review.Low, File: "README.md", Title: strings.TrimSpace(string(readme)), Detail: "read from the checkout"}}}}
}

// repoGitServer serves root's repositories over smart HTTP on loopback and records the
// Authorization headers and fetches it saw.
func repoGitServer(t *testing.T, root string) (url string, auths func() []string, fetches *atomic.Int32) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	var mu sync.Mutex
	var seen []string
	fetches = &atomic.Int32{}
	h := &cgi.Handler{Path: git, Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			fetches.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }, fetches
}

func testGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestHTTPServiceRepository: through the HTTP service and mcp-go's streamable HTTP client, a
// review_cline naming a repository by URL and commit is fetched from a loopback git server with
// the tenant's read token and reviewed in a checkout at that commit, which is gone once the call
// answered; a second call of the same commit is served from the cache (the git server counts
// one fetch); a sent bundle works the same way; file://, ext::, credentials in the URL, a
// non-hex commit, an oversized bundle and repository with cwd are refused without reaching the
// runner; the token appears in no result and no log line.
func TestHTTPServiceRepository(t *testing.T) {
	const readToken = "tenant-git-read-token-91c2"
	root := t.TempDir()
	work := t.TempDir()
	testGit(t, work, "init", "-q", "-b", "main")
	_ = os.WriteFile(filepath.Join(work, "README.md"), []byte("version one\n"), 0o644)
	testGit(t, work, "add", ".")
	testGit(t, work, "commit", "-q", "-m", "one")
	commit := testGit(t, work, "rev-parse", "HEAD")
	testGit(t, root, "clone", "-q", "--bare", work, "app.git")
	gitURL, auths, fetches := repoGitServer(t, root)

	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	file := `{"tenants": [{"name": "alpha", "tokenSha256": ["` + service.Hash("alpha-token") + `"], "gitReadToken": "` + readToken + `",
		"maxConcurrent": 2, "maxQueued": 2, "maxJobs": 1}]}`
	if err := os.WriteFile(tokens, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	toks, err := service.LoadTokens(tokens, log)
	if err != nil {
		t.Fatal(err)
	}
	inner := &checkoutInner{}
	repos := &service.Repos{Dir: filepath.Join(dir, "repos"), MaxBundle: 64 << 10, AllowLoopbackHTTP: true}
	ctx, cancel := context.WithCancel(context.Background())
	js := &jobs.Store{Dir: filepath.Join(dir, "jobs"), Owner: "test"}
	srv := httptest.NewServer(httpService(ctx, httpParts{cfg: &config{isolation: "docker", maxConcurrent: 4}, log: log, inner: inner,
		jobs: js, auth: toks, admission: &service.Admission{}, repos: repos}))
	t.Cleanup(func() { srv.Close(); cancel(); js.Stop(context.Background()) })
	fx := &httpFixture{url: srv.URL + mcpPath}
	c := fx.mustClient(t, "alpha-token")

	// Over HTTP the run tools that take a cwd advertise repository beside it, cwd optional.
	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	advertised := 0
	for _, tool := range list.Tools {
		var in struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		b, _ := json.Marshal(tool)
		var whole struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		_ = json.Unmarshal(b, &whole)
		_ = json.Unmarshal(whole.InputSchema, &in)
		if in.Properties["repository"] != nil {
			advertised++
			if slices.Contains(in.Required, "cwd") {
				t.Errorf("%s requires cwd beside repository", tool.Name)
			}
		}
	}
	if advertised != 4 {
		t.Errorf("%d tools advertise repository, want 4 (ask_cline, ask_cline_workspace, review_cline, apply_cline_edits)", advertised)
	}

	byURL := map[string]any{"url": gitURL + "/app.git", "commit": commit}
	var answers []string
	for i := range 2 {
		sc, res := call(t, c, "review_cline", map[string]any{"repository": byURL, "target": "commit:" + commit})
		answers = append(answers, text(res))
		rev, _ := sc["review"].(map[string]any)
		findings, _ := rev["findings"].([]any)
		if res.IsError || rev["head"] != commit || len(findings) != 1 || findings[0].(map[string]any)["title"] != "version one" {
			t.Fatalf("call %d: review of URL+commit: %s %v", i+1, text(res), sc)
		}
	}
	if n := fetches.Load(); n != 1 || repos.Fetches() != 1 {
		t.Fatalf("two calls of the same commit: the git server answered %d fetches (service: %d); want 1", n, repos.Fetches())
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+readToken))
	if got := auths(); !contains(got, want) {
		t.Fatalf("the git server never saw the tenant's read token: %q", got)
	}
	for _, cwd := range inner.cwds {
		if _, err := os.Stat(cwd); !os.IsNotExist(err) {
			t.Fatalf("the checkout %s outlived its call: %v", cwd, err)
		}
	}

	bundleFile := filepath.Join(t.TempDir(), "b.bundle")
	testGit(t, work, "bundle", "create", bundleFile, "main")
	raw, _ := os.ReadFile(bundleFile)
	sc, res := call(t, c, "ask_cline_workspace", map[string]any{"prompt": "look", "repository": map[string]any{"bundle": base64.StdEncoding.EncodeToString(raw), "commit": commit}})
	if res.IsError || sc["ok"] != true {
		t.Fatalf("a sent bundle: %s", text(res))
	}

	// A background job outlives its request: its run still finds the checkout, which is
	// removed when the job ends.
	sc, _ = call(t, c, "review_cline", map[string]any{"repository": byURL, "background": true})
	id, _ := sc["jobId"].(string)
	if id == "" {
		t.Fatalf("background review: %v", sc)
	}
	waitFor(t, func() bool {
		sc, _ := call(t, c, "cline_job", map[string]any{"jobId": id})
		return sc["state"] != "running"
	})
	if sc, res := call(t, c, "cline_job", map[string]any{"jobId": id}); sc["state"] != "succeeded" {
		t.Fatalf("the background review of a repository: %v %s", sc, text(res))
	}
	inner.mu.Lock()
	last := inner.cwds[len(inner.cwds)-1]
	inner.mu.Unlock()
	if _, err := os.Stat(last); !os.IsNotExist(err) {
		t.Fatalf("the background job's checkout outlived the job: %v", err)
	}

	before := inner.calls.Load()
	refused := map[string]map[string]any{
		"file URL":       {"prompt": "x", "repository": map[string]any{"url": "file://" + root + "/app.git", "commit": commit}},
		"ext URL":        {"prompt": "x", "repository": map[string]any{"url": "ext::sh -c id", "commit": commit}},
		"credentials":    {"prompt": "x", "repository": map[string]any{"url": strings.Replace(gitURL, "http://", "http://u:p@", 1) + "/app.git", "commit": commit}},
		"non-hex commit": {"prompt": "x", "repository": map[string]any{"url": gitURL + "/app.git", "commit": "HEAD~1"}},
		"oversized":      {"prompt": "x", "repository": map[string]any{"bundle": base64.StdEncoding.EncodeToString(make([]byte, 65<<10)), "commit": commit}},
		"with cwd":       {"prompt": "x", "cwd": work, "repository": byURL},
		"unknown member": {"prompt": "x", "repository": map[string]any{"url": gitURL + "/app.git", "commit": commit, "ref": "main"}},
	}
	for name, args := range refused {
		sc, res := call(t, c, "ask_cline_workspace", args)
		if !res.IsError || sc["kind"] != "launch_failed" || !strings.HasPrefix(text(res), "repository: ") {
			t.Errorf("%s: not refused: %s %v", name, text(res), sc)
		}
		answers = append(answers, text(res))
	}
	if n := inner.calls.Load(); n != before {
		t.Fatalf("%d refused calls reached the runner", n-before)
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("refused calls reached the git server: %d fetches", n)
	}
	logMu.Lock()
	all := logs.String() + strings.Join(answers, "\n")
	logMu.Unlock()
	if strings.Contains(all, readToken) || strings.Contains(all, want[len("Basic "):]) {
		t.Fatal("the tenant's read token appears in a result or a log line")
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestCheckServiceMaxBundle: --http-max-bundle takes 0 (the default) to 1 GiB.
func TestCheckServiceMaxBundle(t *testing.T) {
	for b, ok := range map[int64]bool{0: true, service.DefaultMaxBundle: true, 1 << 30: true, -1: false, 1<<30 + 1: false} {
		cfg := &config{isolation: "docker", service: serviceFlags{addr: "127.0.0.1:0", maxBundle: b}}
		if err := checkService(cfg); (err == nil) != ok {
			t.Errorf("--http-max-bundle %d: got %v, want ok=%v", b, err, ok)
		}
	}
}
