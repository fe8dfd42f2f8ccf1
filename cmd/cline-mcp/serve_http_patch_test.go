package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/service"
)

// editingInner stands in for an apply_cline_edits run: it edits the call's checkout (a text
// change, a changed and a new binary file) and, when hostile, also plants a symbolic link to a
// directory outside and a .gitmodules. It answers with a text diff, as the runner does.
type editingInner struct {
	hostile bool
	outside string
	planted atomic.Bool // the marker: the hostile edits were made in the checkout
}

func (f *editingInner) Do(_ context.Context, call run.Call, _ run.Progress) run.Result {
	edits := map[string]string{"README.md": "version two\n", "logo.bin": "\x00\xffnew logo\x00", "data/blob.bin": "\x89PNG\x00\x01\x02"}
	for name, content := range edits {
		p := filepath.Join(call.Cwd, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return run.Result{Kind: "launch_failed", Message: err.Error()}
		}
	}
	if f.hostile {
		err1 := os.Symlink(f.outside, filepath.Join(call.Cwd, "escape"))
		err2 := os.WriteFile(filepath.Join(call.Cwd, ".gitmodules"), []byte("[submodule \"x\"]\n\tpath = x\n\turl = ext::sh -c id\n"), 0o644)
		f.planted.Store(err1 == nil && err2 == nil)
	}
	diff := "diff --git a/logo.bin b/logo.bin\nBinary files a/logo.bin and b/logo.bin differ\n"
	return run.Result{OK: true, Text: "edited", Attempts: 1, Diff: &diff}
}

// TestHTTPServiceApplyPatch: apply_cline_edits on a sent bundle answers, over the HTTP service,
// a binary-safe patch headed by the bundle's commit; `cline-mcp apply-patch` applies the saved
// tool result to a runner's clone at that commit, and the clone then holds the run's bytes
// exactly (binary files included), staged; on a clone one commit further it exits 4, on one
// whose README.md changed 5, and changes nothing. A hostile run's patch (a symbolic link out of the checkout, a .gitmodules)
// is refused with exit 3 and leaves the runner's clone as it was.
func TestHTTPServiceApplyPatch(t *testing.T) {
	work := t.TempDir()
	testGit(t, work, "init", "-q", "-b", "main")
	_ = os.WriteFile(filepath.Join(work, "README.md"), []byte("version one\n"), 0o644)
	_ = os.WriteFile(filepath.Join(work, "logo.bin"), []byte("\x00\x01old logo\xfe"), 0o644)
	testGit(t, work, "add", ".")
	testGit(t, work, "commit", "-q", "-m", "one")
	commit := testGit(t, work, "rev-parse", "HEAD")
	bundle := filepath.Join(t.TempDir(), "b.bundle")
	testGit(t, work, "bundle", "create", bundle, "main")
	raw, _ := os.ReadFile(bundle)
	repo := map[string]any{"bundle": base64.StdEncoding.EncodeToString(raw), "commit": commit}

	outside := t.TempDir()
	for _, hostile := range []bool{false, true} {
		if hostile && runtime.GOOS == "windows" {
			continue // the hostile run plants a symbolic link
		}
		inner := &editingInner{hostile: hostile, outside: outside}
		c := patchService(t, inner)
		sc, res := call(t, c, "apply_cline_edits", map[string]any{"prompt": "edit", "repository": repo})
		diff, _ := sc["diff"].(string)
		if res.IsError || !strings.HasPrefix(diff, "cline-mcp-patch: 1\nbase: "+commit+"\n") || !strings.Contains(diff, "GIT binary patch") {
			t.Fatalf("hostile=%v: the result holds no binary patch on %s: %s\n%v", hostile, commit, text(res), sc)
		}
		saved := filepath.Join(t.TempDir(), "result.json")
		b, _ := json.Marshal(res)
		if err := os.WriteFile(saved, b, 0o600); err != nil {
			t.Fatal(err)
		}
		runner := filepath.Join(t.TempDir(), "runner")
		testGit(t, "", "clone", "-q", work, runner)
		var stdout, stderr bytes.Buffer
		code := realMain([]string{"apply-patch", "--dir", runner, saved}, nil, &stdout, &stderr)
		if hostile {
			if !inner.planted.Load() {
				t.Fatal("marker: the hostile run did not plant its link and .gitmodules")
			}
			if code != applyRefused || !strings.Contains(stderr.String(), "mode 120000") && !strings.Contains(stderr.String(), ".gitmodules") {
				t.Fatalf("hostile patch: exit %d, %s", code, stderr.String())
			}
			t.Logf("the hostile patch: %s", stderr.String())
			if st := testGit(t, runner, "status", "--porcelain"); st != "" {
				t.Fatalf("the refused patch changed the runner's clone:\n%s", st)
			}
			if _, err := os.Lstat(filepath.Join(runner, "escape")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the link exists in the runner's clone: %v", err)
			}
			continue
		}
		if code != applyOK {
			t.Fatalf("apply-patch: exit %d\n%s", code, stderr.String())
		}
		for name, want := range map[string]string{"README.md": "version two\n", "logo.bin": "\x00\xffnew logo\x00", "data/blob.bin": "\x89PNG\x00\x01\x02"} {
			if got, _ := os.ReadFile(filepath.Join(runner, name)); string(got) != want {
				t.Errorf("%s in the runner's clone: %q, want %q", name, got, want)
			}
		}
		if st := testGit(t, runner, "diff", "--name-only"); st != "" {
			t.Errorf("unstaged after apply-patch (want all staged): %s", st)
		}
		if !strings.Contains(stdout.String(), "logo.bin\tbinary") {
			t.Errorf("apply-patch did not list the binary file: %q", stdout.String())
		}
		wantPatchRefusedElsewhere(t, work, saved, commit)
	}
}

// wantPatchRefusedElsewhere: the saved patch on a clone one commit further exits 4, on a clone
// whose README.md changed locally 5, and neither changes.
func wantPatchRefusedElsewhere(t *testing.T, work, saved, commit string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	moved := filepath.Join(t.TempDir(), "moved")
	testGit(t, "", "clone", "-q", work, moved)
	testGit(t, moved, "commit", "-q", "--allow-empty", "-m", "later")
	stderr.Reset()
	if code := realMain([]string{"apply-patch", "--dir", moved, saved}, nil, &stdout, &stderr); code != applyWrongBase || !strings.Contains(stderr.String(), commit) {
		t.Fatalf("a clone at another commit: exit %d, %s", code, stderr.String())
	}
	if st := testGit(t, moved, "status", "--porcelain"); st != "" {
		t.Fatalf("the wrong-base clone changed:\n%s", st)
	}

	// The same commit with README.md changed locally: git would not apply the hunk.
	edited := filepath.Join(t.TempDir(), "edited")
	testGit(t, "", "clone", "-q", work, edited)
	_ = os.WriteFile(filepath.Join(edited, "README.md"), []byte("local change\n"), 0o644)
	stderr.Reset()
	if code := realMain([]string{"apply-patch", "--dir", edited, saved}, nil, &stdout, &stderr); code != applyNotApplies {
		t.Fatalf("a clone with README.md changed: exit %d, %s", code, stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(edited, "logo.bin")); string(b) != "\x00\x01old logo\xfe" {
		t.Fatalf("a patch that does not apply changed logo.bin: %q", b)
	}
}

// patchService starts the HTTP service with inner as its runner and returns a tenant's client.
func patchService(t *testing.T, inner service.Inner) *client.Client {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	file := `{"tenants": [{"name": "alpha", "tokenSha256": ["` + service.Hash("alpha-token") + `"], "maxConcurrent": 1, "maxQueued": 1, "maxJobs": 0}]}`
	if err := os.WriteFile(tokens, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	toks, err := service.LoadTokens(tokens, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	js := &jobs.Store{Dir: filepath.Join(dir, "jobs"), Owner: "test"}
	srv := httptest.NewServer(httpService(ctx, httpParts{cfg: &config{isolation: "docker", maxConcurrent: 2}, log: log, inner: inner,
		jobs: js, auth: toks, admission: &service.Admission{}, repos: &service.Repos{Dir: filepath.Join(dir, "repos")}}))
	t.Cleanup(func() { srv.Close(); cancel(); js.Stop(context.Background()) })
	return (&httpFixture{url: srv.URL + mcpPath}).mustClient(t, "alpha-token")
}
