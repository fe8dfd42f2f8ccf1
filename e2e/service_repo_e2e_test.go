//go:build e2e

package e2e

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/service"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// tlsGitServer serves root's repositories over git's smart HTTP protocol with TLS on loopback
// (git http-backend through net/http/cgi), recording the Authorization headers and fetches it
// got; caFile is its certificate for the client's GIT_SSL_CAINFO.
type tlsGitServer struct {
	url, caFile string
	mu          sync.Mutex
	auths       []string
	fetches     int
}

func startTLSGitServer(t *testing.T, root string) *tlsGitServer {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	gs := &tlsGitServer{}
	h := &cgi.Handler{Path: git, Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gs.mu.Lock()
		gs.auths = append(gs.auths, r.Header.Get("Authorization"))
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			gs.fetches++
		}
		gs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	gs.url = srv.URL
	gs.caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(gs.caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return gs
}

func repoGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestHTTPServiceRepositoryDocker drives the built server in service mode with Docker isolation
// and the fake image, with no file system shared between caller and service: a review_cline
// names its repository by https URL and commit, which the service fetches from a loopback git
// server with the tenant's read token and reviews in a container (the review's head is that
// commit); a second call fetches nothing; apply_cline_edits on the repository returns a diff that
// `git apply --3way` applies in the caller's own clone; a file:// URL is refused; the read
// token is in no log line of the service.
func TestHTTPServiceRepositoryDocker(t *testing.T) {
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	e := prepareEnv(t)
	src, gitRoot := t.TempDir(), t.TempDir()
	gitInit(t, src, map[string]string{"app.go": appV1, "README.md": "hello\n"})
	if err := os.WriteFile(filepath.Join(src, "app.go"), []byte("package main\n\nfunc main() {\n\ta := 1\n\tb := a / 0\n\t_ = b\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repoGit(t, src, "commit", "-q", "-am", "divide")
	commit := repoGit(t, src, "rev-parse", "HEAD")
	repoGit(t, gitRoot, "clone", "-q", "--bare", src, "app.git")
	gs := startTLSGitServer(t, gitRoot)
	e.hooks = append(e.hooks, "GIT_SSL_CAINFO="+gs.caFile)

	const token, readToken = "e2e-repo-tenant", "e2e-git-read-token-5d1e"
	tokens := filepath.Join(e.root, "tokens.json")
	file := `{"tenants": [{"name": "ci", "tokenSha256": ["` + service.Hash(token) + `"], "gitReadToken": "` + readToken + `",
		"root": "` + e.work + `", "maxConcurrent": 1, "maxQueued": 2, "maxJobs": 1}]}`
	if err := os.WriteFile(tokens, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startHTTPServer(t, e, "--http-tokens", tokens, "--isolation", "docker",
		"--docker-image", mcpsession.FakeImage, "--docker-network", "none")
	c := s.client(t, token)
	repo := map[string]any{"url": gs.url + "/app.git", "commit": commit}

	block := `{"summary": "s", "findings": [{"severity": "high", "file": "app.go", "line": 5, "title": "division by zero", "detail": "d"}]}`
	for i := range 2 {
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "review_cline",
			Arguments: map[string]any{"prompt": reviewAnswer(block), "repository": repo, "target": "commit:" + commit}}})
		if err != nil {
			t.Fatal(err)
		}
		sc := structuredOf(t, res)
		wantDockerOK(t, sc)
		rv, _ := sc["review"].(map[string]any)
		findings, _ := rv["findings"].([]any)
		if rv["head"] != commit || len(findings) != 1 || findings[0].(map[string]any)["title"] != "division by zero" {
			t.Fatalf("call %d: review of the fetched commit: %v", i+1, rv)
		}
	}
	gs.mu.Lock()
	fetches, auths := gs.fetches, append([]string(nil), gs.auths...)
	gs.mu.Unlock()
	if fetches != 1 {
		t.Errorf("two reviews of one commit: the git server answered %d fetches, want 1", fetches)
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + readToken))
	if !strings.Contains(strings.Join(auths, "\n"), "Basic "+basic) {
		t.Errorf("the git server never got the tenant's read token: %q", auths)
	}

	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "apply_cline_edits",
		Arguments: map[string]any{"prompt": "fake:edit?path=hello.txt&content=" + "from%20the%20service%0A", "repository": repo}}})
	if err != nil {
		t.Fatal(err)
	}
	sc := structuredOf(t, res)
	wantDockerOK(t, sc)
	diff, _ := sc["diff"].(string)
	if !strings.Contains(diff, "hello.txt") {
		t.Fatalf("apply_cline_edits on a repository returned no diff of hello.txt: %v", sc)
	}
	runner := t.TempDir()
	repoGit(t, runner, "clone", "-q", src, ".")
	patch := filepath.Join(t.TempDir(), "cline.patch")
	if err := os.WriteFile(patch, []byte(diff), 0o600); err != nil {
		t.Fatal(err)
	}
	repoGit(t, runner, "apply", "--3way", "--check", patch)
	repoGit(t, runner, "apply", "--3way", patch)
	if b, err := os.ReadFile(filepath.Join(runner, "hello.txt")); err != nil || string(b) != "from the service\n" {
		t.Fatalf("the returned diff applied on the runner: hello.txt %q, %v", b, err)
	}
	wantApplyPatch(t, src, diff)

	wantSnapshotReview(t, c, src, commit)

	res, err = c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "review_cline",
		Arguments: map[string]any{"repository": map[string]any{"url": "file://" + gitRoot + "/app.git", "commit": commit}}}})
	if err != nil || structuredOf(t, res)["kind"] != "launch_failed" || !strings.Contains(mcpsession.Text(res), "only https") {
		t.Errorf("a file:// URL: got %v %v, want launch_failed", err, mcpsession.Text(res))
	}
	s.mu.Lock()
	logs := s.stderr.String()
	s.mu.Unlock()
	if strings.Contains(logs, readToken) || strings.Contains(logs, basic) {
		t.Error("the tenant's read token is in the service's log")
	}
}

// wantSnapshotReview: the caller's uncommitted work, sent as a bundle with a snapshot commit
// (made as docs/service.md shows), is reviewed with target uncommitted: the review's files are
// the uncommitted change and the new untracked file.
func wantSnapshotReview(t *testing.T, c *client.Client, src, commit string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(src, "README.md"), []byte("hello, edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "new.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bundle.b64")
	script := `set -e
tmp=$(mktemp -d) && idx=$tmp/index && GIT_INDEX_FILE=$idx git add -A
snap=$(git commit-tree -p HEAD -m snapshot "$(GIT_INDEX_FILE=$idx git write-tree)") && rm -r "$tmp"
git update-ref refs/cline-mcp/snapshot "$snap"
git bundle create - HEAD refs/cline-mcp/snapshot | base64 -w0 > "$1"
git update-ref -d refs/cline-mcp/snapshot
echo "$snap"`
	cmd := exec.Command("sh", "-c", script, "sh", out)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	snapOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("making the snapshot: %v", err)
	}
	snap := strings.TrimSpace(string(snapOut))
	b64, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	block := `{"summary": "s", "findings": [{"severity": "low", "file": "README.md", "line": 1, "title": "greeting", "detail": "d"}]}`
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "review_cline",
		Arguments: map[string]any{"prompt": reviewAnswer(block), "target": "uncommitted",
			"repository": map[string]any{"bundle": string(b64), "commit": commit, "snapshot": snap}}}})
	if err != nil {
		t.Fatal(err)
	}
	sc := structuredOf(t, res)
	wantDockerOK(t, sc)
	rv, _ := sc["review"].(map[string]any)
	var paths []string
	for _, f := range rv["files"].([]any) {
		paths = append(paths, fmt.Sprint(f.(map[string]any)["path"]))
	}
	if strings.Join(paths, ",") != "README.md,new.go" {
		t.Fatalf("review of the sent uncommitted work: files %v, want README.md and new.go (%v)", paths, rv)
	}
}

// wantApplyPatch: `cline-mcp apply-patch` applies the returned patch to another clone of src
// at the patch's base, staged.
func wantApplyPatch(t *testing.T, src, diff string) {
	t.Helper()
	runner := t.TempDir()
	repoGit(t, runner, "clone", "-q", src, ".")
	cmd := exec.Command(bins.ClineMCP, "apply-patch", "--dir", runner, "-")
	cmd.Stdin = strings.NewReader(diff)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cline-mcp apply-patch: %v\n%s", err, out)
	}
	if got := repoGit(t, runner, "diff", "--cached", "--name-only"); got != "hello.txt" {
		t.Fatalf("after apply-patch the index holds %q, want hello.txt", got)
	}
}
