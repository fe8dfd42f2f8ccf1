package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gitServer serves the repositories under its root over git's smart HTTP protocol (git
// http-backend through net/http/cgi) on loopback, and records every Authorization header and
// how many fetches (upload-pack requests) it answered.
type gitServer struct {
	URL   string
	mu    sync.Mutex
	auths []string
	packs int
}

func (s *gitServer) seen() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...), s.packs
}

func startGitServer(t *testing.T, root string) *gitServer {
	t.Helper()
	gs := &gitServer{}
	h := &cgi.Handler{Path: gitPath(t), Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gs.mu.Lock()
		gs.auths = append(gs.auths, r.Header.Get("Authorization"))
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			gs.packs++
		}
		gs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	gs.URL = srv.URL
	return gs
}

func gitPath(t *testing.T) string {
	p, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	return p
}

// gitRun runs git in dir for the test's own repositories.
func gitRun(t *testing.T, dir string, args ...string) string {
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

// makeRepo creates a repository with two commits under root/name.git (bare, served) and
// returns both commit ids; the first commit is not the tip of any branch.
func makeRepo(t *testing.T, root, name string) (first, second string) {
	t.Helper()
	work := t.TempDir()
	gitRun(t, work, "init", "-q", "-b", "main")
	_ = os.WriteFile(filepath.Join(work, "README.md"), []byte("first version\n"), 0o644)
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "-q", "-m", "first")
	first = gitRun(t, work, "rev-parse", "HEAD")
	_ = os.WriteFile(filepath.Join(work, "README.md"), []byte("second version\n"), 0o644)
	gitRun(t, work, "commit", "-q", "-am", "second")
	second = gitRun(t, work, "rev-parse", "HEAD")
	gitRun(t, root, "clone", "-q", "--bare", work, name+".git")
	return first, second
}

const readToken = "read-token-of-alpha-7f3a"

// TestReposFetchByURL: a commit named by URL and id is fetched from a loopback git server with
// the tenant's read token (the server sees it as basic auth), checked out at that commit (one
// that is no branch tip), and found in the cache by a second call without a second fetch. The
// token appears in no error.
func TestReposFetchByURL(t *testing.T) {
	root := t.TempDir()
	first, second := makeRepo(t, root, "app")
	gs := startGitServer(t, root)
	repos := &Repos{Dir: t.TempDir(), AllowLoopbackHTTP: true}
	tenant := Tenant{Name: "alpha", GitReadToken: Secret(readToken)}
	url := gs.URL + "/app.git"

	co, err := repos.Prepare(context.Background(), tenant, Repository{URL: url, Commit: first})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(co.Dir, "README.md"))
	if err != nil || string(b) != "first version\n" {
		t.Fatalf("checkout of %s: README %q, %v", first, b, err)
	}
	if head := gitRun(t, co.Dir, "rev-parse", "HEAD"); head != first {
		t.Fatalf("HEAD of the checkout is %s, want %s", head, first)
	}
	auths, packs := gs.seen()
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+readToken))
	if packs != 1 || !contains(auths, want) {
		t.Fatalf("the git server answered %d fetches and saw Authorization %q; want 1 with the tenant's token", packs, auths)
	}
	co.Remove()
	if _, err := os.Stat(co.Dir); !os.IsNotExist(err) {
		t.Fatalf("checkout not removed: %v", err)
	}

	co2, err := repos.Prepare(context.Background(), tenant, Repository{URL: url, Commit: first})
	if err != nil {
		t.Fatal(err)
	}
	defer co2.Remove()
	if _, packs2 := gs.seen(); packs2 != 1 || repos.Fetches() != 1 {
		t.Fatalf("a second call of the same commit fetched again: server %d fetches, service %d", packs2, repos.Fetches())
	}
	co3, err := repos.Prepare(context.Background(), tenant, Repository{URL: url, Commit: second})
	if err != nil {
		t.Fatal(err)
	}
	defer co3.Remove()
	if repos.Fetches() != 2 {
		t.Fatalf("a new commit of the same URL: %d fetches, want 2", repos.Fetches())
	}

	_, err = repos.Prepare(context.Background(), tenant, Repository{URL: url, Commit: strings.Repeat("ab", 20)})
	if err == nil || strings.Contains(err.Error(), readToken) || strings.Contains(err.Error(), want[len("Basic "):]) {
		t.Fatalf("a commit the server lacks: err %v (must fail and never show the token)", err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestReposRefusedBeforeGit: URLs with another transport, credentials or a file path, and
// commits that are not full ids, are refused before git runs (a git that would run writes a
// marker first; the marker stays absent).
func TestReposRefusedBeforeGit(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "git-ran")
	fakeGit := filepath.Join(t.TempDir(), "git")
	if err := os.WriteFile(fakeGit, []byte("#!/bin/sh\necho ran >> "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The marker shows the fake git runs when a call gets that far.
	repos := &Repos{Dir: t.TempDir(), MaxBundle: 1024}
	repos.Git.Path = fakeGit
	commit := strings.Repeat("a", 40)
	if _, err := repos.Prepare(context.Background(), Tenant{Name: "alpha"}, Repository{URL: "https://example.invalid/r.git", Commit: commit}); err == nil {
		t.Fatal("the fake git failed; Prepare must fail")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the fake git never ran for a good URL, so the refusals below would prove nothing: %v", err)
	}
	_ = os.Remove(marker)

	cases := map[string]Repository{
		"file URL":           {URL: "file:///etc", Commit: commit},
		"ext transport":      {URL: "ext::sh -c touch% /tmp/pwned", Commit: commit},
		"ext with scheme":    {URL: "https::ext::sh", Commit: commit},
		"credentials in URL": {URL: "https://user:secret@example.com/r.git", Commit: commit},
		"token as user":      {URL: "https://ghp_secret@example.com/r.git", Commit: commit},
		"plain http":         {URL: "http://example.com/r.git", Commit: commit},
		"loopback http":      {URL: "http://127.0.0.1:1/r.git", Commit: commit},
		"ssh":                {URL: "ssh://git@example.com/r.git", Commit: commit},
		"scp-like":           {URL: "git@example.com:r.git", Commit: commit},
		"leading dash":       {URL: "--upload-pack=touch /tmp/x", Commit: commit},
		"local path":         {URL: "/srv/repo.git", Commit: commit},
		"query":              {URL: "https://example.com/r.git?x=1", Commit: commit},
		"escape character":   {URL: "https://example.com/r\x1b[2J.git", Commit: commit},
		"non-ASCII host":     {URL: "https://exаmple.com/r.git", Commit: commit},
		"non-hex commit":     {URL: "https://example.com/r.git", Commit: strings.Repeat("g", 40)},
		"short commit":       {URL: "https://example.com/r.git", Commit: "abc123"},
		"branch as commit":   {URL: "https://example.com/r.git", Commit: "main"},
		"option as commit":   {URL: "https://example.com/r.git", Commit: "--upload-pack=x"},
		"upper-case commit":  {URL: "https://example.com/r.git", Commit: strings.Repeat("A", 40)},
		"oversized bundle":   {Bundle: strings.Repeat("A", 2000), Commit: commit},
		"url and bundle":     {URL: "https://example.com/r.git", Bundle: "AAAA", Commit: commit},
		"neither":            {Commit: commit},
	}
	for name, spec := range cases {
		if _, err := repos.Prepare(context.Background(), Tenant{Name: "alpha"}, spec); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("git ran for a refused repository")
	}
}

// TestReposBundle: a sent bundle is verified and its commit checked out; one that lacks the
// named commit, one that needs commits the service does not have, and one that is no bundle are
// refused.
func TestReposBundle(t *testing.T) {
	work := t.TempDir()
	gitRun(t, work, "init", "-q", "-b", "main")
	_ = os.WriteFile(filepath.Join(work, "a.txt"), []byte("one\n"), 0o644)
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "-q", "-m", "one")
	first := gitRun(t, work, "rev-parse", "HEAD")
	_ = os.WriteFile(filepath.Join(work, "a.txt"), []byte("two\n"), 0o644)
	gitRun(t, work, "commit", "-q", "-am", "two")
	second := gitRun(t, work, "rev-parse", "HEAD")
	bundle := func(args ...string) string {
		f := filepath.Join(t.TempDir(), "b.bundle")
		gitRun(t, work, append([]string{"bundle", "create", f}, args...)...)
		b, _ := os.ReadFile(f)
		return base64.StdEncoding.EncodeToString(b)
	}
	repos := &Repos{Dir: t.TempDir()}
	tenant := Tenant{Name: "alpha"}
	co, err := repos.Prepare(context.Background(), tenant, Repository{Bundle: bundle("main"), Commit: second})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Remove()
	if b, _ := os.ReadFile(filepath.Join(co.Dir, "a.txt")); string(b) != "two\n" {
		t.Fatalf("bundle checkout: a.txt %q", b)
	}
	if _, err := os.ReadDir(filepath.Join(repos.Dir, "alpha", "bundles")); err == nil {
		if left, _ := os.ReadDir(filepath.Join(repos.Dir, "alpha", "bundles")); len(left) != 0 {
			t.Fatalf("the bundle's temporary repository is left: %v", left)
		}
	}
	// git bundle create x.bundle HEAD, as docs/service.md says: the commit only under HEAD.
	gitRun(t, work, "checkout", "-q", "--detach", "HEAD")
	co2, err := repos.Prepare(context.Background(), tenant, Repository{Bundle: bundle("HEAD"), Commit: second})
	if err != nil {
		t.Fatalf("a bundle of a detached HEAD: %v", err)
	}
	co2.Remove()
	for name, spec := range map[string]Repository{
		"commit not in it":   {Bundle: bundle(first + "..main"), Commit: first},
		"needs prerequisite": {Bundle: bundle(first + "..main"), Commit: second},
		"not a bundle":       {Bundle: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 100)), Commit: second},
		"not base64":         {Bundle: "!!!!", Commit: second},
	} {
		if _, err := repos.Prepare(context.Background(), tenant, spec); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestReposLimits: a fetch that grows the mirror past MaxFetch is refused and leaves no mirror
// that a later call could use; a checkout that would exceed its bound is refused; with Hosts
// set, another host is refused before git runs.
func TestReposLimits(t *testing.T) {
	root := t.TempDir()
	work := t.TempDir()
	gitRun(t, work, "init", "-q", "-b", "main")
	big := make([]byte, 256<<10)
	_, _ = rand.Read(big) // incompressible: the pack is as large as the file
	_ = os.WriteFile(filepath.Join(work, "big.bin"), big, 0o644)
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "-q", "-m", "big")
	commit := gitRun(t, work, "rev-parse", "HEAD")
	gitRun(t, root, "clone", "-q", "--bare", work, "big.git")
	gs := startGitServer(t, root)
	url := gs.URL + "/big.git"
	repos := &Repos{Dir: t.TempDir(), AllowLoopbackHTTP: true, MaxFetch: 64 << 10}
	_, err := repos.Prepare(context.Background(), Tenant{Name: "alpha"}, Repository{URL: url, Commit: commit})
	if err == nil || !strings.Contains(err.Error(), "grew past") {
		t.Fatalf("a 256 KiB fetch with a 64 KiB limit: %v", err)
	}
	if _, packs := gs.seen(); packs != 1 {
		t.Fatalf("the git server answered %d fetches; the refusal must come from the fetch itself", packs)
	}
	mirrors, _ := os.ReadDir(filepath.Join(repos.Dir, "alpha", "mirrors"))
	if len(mirrors) != 0 {
		t.Fatalf("the oversized fetch left a mirror: %v", mirrors)
	}
	repos.MaxFetch = 1 << 20
	if _, err := repos.Prepare(context.Background(), Tenant{Name: "alpha"}, Repository{URL: url, Commit: commit}); err != nil {
		t.Fatalf("within the limit: %v", err)
	}

	hosts := &Repos{Dir: t.TempDir(), AllowLoopbackHTTP: true, Hosts: []string{"git.example.com"}}
	if _, err := hosts.Prepare(context.Background(), Tenant{Name: "alpha"}, Repository{URL: url, Commit: commit}); err == nil || !strings.Contains(err.Error(), "not among the hosts") {
		t.Fatalf("a host outside Hosts: %v", err)
	}
	if _, packs := gs.seen(); packs != 2 {
		t.Fatalf("the git server answered %d fetches, want 2 (none for the host outside the list)", packs)
	}
}

// TestReposCheckoutBound: a small bundle whose tree expands past four times MaxFetch (a file of
// zeros) is refused while it is checked out, and its checkout is removed.
func TestReposCheckoutBound(t *testing.T) {
	work := t.TempDir()
	gitRun(t, work, "init", "-q", "-b", "main")
	_ = os.WriteFile(filepath.Join(work, "zeros"), make([]byte, 8<<20), 0o644)
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "-q", "-m", "zeros")
	commit := gitRun(t, work, "rev-parse", "HEAD")
	f := filepath.Join(t.TempDir(), "b.bundle")
	gitRun(t, work, "bundle", "create", f, "main")
	raw, _ := os.ReadFile(f)
	repos := &Repos{Dir: t.TempDir(), MaxFetch: 512 << 10}
	_, err := repos.Prepare(context.Background(), Tenant{Name: "alpha"}, Repository{Bundle: base64.StdEncoding.EncodeToString(raw), Commit: commit})
	if err == nil || !strings.Contains(err.Error(), "grew past") {
		t.Fatalf("an 8 MiB checkout with a 2 MiB bound (bundle of %d bytes): %v", len(raw), err)
	}
	if left, _ := os.ReadDir(filepath.Join(repos.Dir, "alpha", "checkouts")); len(left) != 0 {
		t.Fatalf("the refused checkout is left: %v", left)
	}
}

// TestReposBundleSnapshot: a bundle with a snapshot commit of the caller's uncommitted work is
// checked out at the commit, with the snapshot's differences as uncommitted changes (a changed
// file modified, a new file untracked, a deleted file missing); a snapshot without a bundle, or
// one the bundle lacks, is refused.
func TestReposBundleSnapshot(t *testing.T) {
	work := t.TempDir()
	gitRun(t, work, "init", "-q", "-b", "main")
	_ = os.WriteFile(filepath.Join(work, "a.txt"), []byte("one\n"), 0o644)
	_ = os.WriteFile(filepath.Join(work, "gone.txt"), []byte("x\n"), 0o644)
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "-q", "-m", "one")
	commit := gitRun(t, work, "rev-parse", "HEAD")
	_ = os.WriteFile(filepath.Join(work, "a.txt"), []byte("edited\n"), 0o644)
	_ = os.WriteFile(filepath.Join(work, "new.txt"), []byte("new\n"), 0o644)
	_ = os.Remove(filepath.Join(work, "gone.txt"))
	// The snapshot as docs/service.md makes it: the work tree through a temporary index.
	index := filepath.Join(t.TempDir(), "index")
	cmd := exec.Command("sh", "-c", `GIT_INDEX_FILE="$1" git add -A && tree=$(GIT_INDEX_FILE="$1" git write-tree) && git commit-tree -p HEAD -m snapshot "$tree"`, "sh", index)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	snapshot := strings.TrimSpace(string(out))
	gitRun(t, work, "update-ref", "refs/cline-mcp/snapshot", snapshot)
	f := filepath.Join(t.TempDir(), "b.bundle")
	gitRun(t, work, "bundle", "create", f, "HEAD", "refs/cline-mcp/snapshot")
	raw, _ := os.ReadFile(f)
	bundle := base64.StdEncoding.EncodeToString(raw)

	repos := &Repos{Dir: t.TempDir()}
	co, err := repos.Prepare(context.Background(), Tenant{Name: "alpha"}, Repository{Bundle: bundle, Commit: commit, Snapshot: snapshot})
	if err != nil {
		t.Fatal(err)
	}
	defer co.Remove()
	if head := gitRun(t, co.Dir, "rev-parse", "HEAD"); head != commit {
		t.Fatalf("HEAD %s, want %s", head, commit)
	}
	status := gitRun(t, co.Dir, "status", "--porcelain")
	if status != "M a.txt\n D gone.txt\n?? new.txt" { // trimmed: the first line's leading space too
		t.Fatalf("uncommitted changes of the checkout:\n%s", status)
	}
	if b, _ := os.ReadFile(filepath.Join(co.Dir, "a.txt")); string(b) != "edited\n" {
		t.Fatalf("a.txt %q", b)
	}
	if refs := gitRun(t, co.Dir, "for-each-ref"); strings.Contains(refs, "snapshot") {
		t.Fatalf("the snapshot's ref is left: %s", refs)
	}
	for name, spec := range map[string]Repository{
		"snapshot with a URL":    {URL: "https://example.com/r.git", Commit: commit, Snapshot: snapshot},
		"snapshot not in bundle": {Bundle: bundle, Commit: commit, Snapshot: strings.Repeat("c", 40)},
		"snapshot not an id":     {Bundle: bundle, Commit: commit, Snapshot: "HEAD"},
	} {
		if _, err := repos.Prepare(context.Background(), Tenant{Name: "alpha"}, spec); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
