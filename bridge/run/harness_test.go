package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// harness is a Runner wired to fakes: a scripted CLI behind both executors, fake settings, git
// and worktrees, all recording into one event log; the backoff records itself too.
type harness struct {
	t    *testing.T
	ev   *events
	cli  *fakeCLI
	set  *fakeSettings
	git  *fakeGit
	wts  *fakeWorktrees
	cfg  Config
	tmp  string // Config.TempDir: every call's private dir lives here
	cwd  string // the checkout the calls run in
	mu   sync.Mutex
	prog []string
}

const (
	envSecret      = "sk-env-secret-0123456789abcdefghij"
	providerSecret = "providers-secret-9876543210zyxwvuts"
)

func newHarness(t *testing.T, steps ...step) *harness {
	t.Helper()
	ev := &events{}
	root := t.TempDir()
	h := &harness{t: t, ev: ev, tmp: filepath.Join(root, "tmp"), cwd: filepath.Join(root, "repo")}
	home := filepath.Join(root, "home")
	wtPath := filepath.Join(root, "wt")
	for _, d := range []string{h.tmp, h.cwd, home, wtPath} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	providers := filepath.Join(home, "providers.json")
	if err := os.WriteFile(providers, []byte(`{"providers":{"openai":{"settings":{"apiKey":"`+providerSecret+`"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.cli = &fakeCLI{t: t, ev: ev, steps: steps}
	h.set = &fakeSettings{ev: ev, path: providers}
	repo := git.Repo{Top: h.cwd, GitDir: filepath.Join(h.cwd, ".git"), CommonDir: filepath.Join(h.cwd, ".git")}
	h.git = &fakeGit{ev: ev, top: h.cwd,
		before: git.Evidence{Repo: repo, Dir: h.cwd, Head: "1111111", Ref: "refs/heads/main", Tree: "tree-before", Index: "index"},
		change: git.Change{HeadBefore: "1111111", HeadAfter: "1111111", Diff: "diff --git a/hello.txt b/hello.txt\n+hello\n",
			ChangedFiles: []git.FileChange{{Path: "hello.txt", Status: "A"}}}}
	h.wts = &fakeWorktrees{ev: ev, info: WorktreeInfo{Path: wtPath, Commit: "1111111",
		Repo: git.Repo{Top: wtPath, GitDir: filepath.Join(h.cwd, ".git", "worktrees", "wt"), CommonDir: filepath.Join(h.cwd, ".git")}}}
	h.cfg = Config{
		ClinePath: func() (string, error) { return filepath.Join(root, "bin", "cline"), nil },
		Host:      h.cli.exec("host"),
		Docker:    h.cli.exec("docker"),
		Env:       []string{"HOME=" + home, "PATH=/usr/bin:/bin", "OPENAI_API_KEY=" + envSecret},
		Home:      home,
		Settings:  h.set,
		Git:       h.git,
		Worktrees: h.wts,
		TempDir:   h.tmp,
		Backoff: func() time.Duration {
			ev.add("backoff")
			return 2 * time.Second
		},
	}
	return h
}

// call is an ask_cline call in the harness's checkout with a 60 s limit (timeouts are retried).
func (h *harness) call(tool Tool) Call {
	return Call{Tool: tool, Prompt: "say PONG", Cwd: h.cwd, TimeoutSeconds: 60}
}

func (h *harness) runner() *Runner {
	h.t.Helper()
	r, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) progress(msg string) {
	h.mu.Lock()
	h.prog = append(h.prog, msg)
	h.mu.Unlock()
}

func (h *harness) progressed() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.prog)
}

// do runs one call on a fresh Runner and checks that it left nothing behind.
func (h *harness) do(ctx context.Context, c Call) Result {
	h.t.Helper()
	res := h.runner().Do(ctx, c, h.progress)
	h.checkClean()
	return res
}

// checkClean: no private temp dir left, every settings copy closed, every hold ended, every
// worktree released.
func (h *harness) checkClean() {
	h.t.Helper()
	if ents, err := os.ReadDir(h.tmp); err != nil || len(ents) != 0 {
		h.t.Errorf("private temp dirs left behind: %v %v", ents, err)
	}
	if copies, holds := h.set.open(); copies != 0 || holds != 0 {
		h.t.Errorf("settings left open: %d copies not closed, %d holds not ended", copies, holds)
	}
	h.wts.mu.Lock()
	defer h.wts.mu.Unlock()
	if h.wts.leased != 0 {
		h.t.Errorf("%d worktrees not released", h.wts.leased)
	}
}

// inBubble runs f in a synctest bubble: backoffs and timeouts pass in fake time.
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, f)
}

func wantEvents(t *testing.T, h *harness, want ...string) {
	t.Helper()
	if got := h.ev.list(); !slices.Equal(got, want) {
		t.Errorf("calls in order:\n got  %q\n want %q", got, want)
	}
}

// result is what a test checks of every Result.
type result struct {
	ok        bool
	kind      string
	attempts  int
	isolation []sandbox.Isolation
	retryable bool
}

func wantResult(t *testing.T, res Result, want result) {
	t.Helper()
	if res.OK != want.ok || res.Kind != want.kind || res.Attempts != want.attempts || res.Retryable != want.retryable {
		t.Errorf("result: ok=%v kind=%q attempts=%d retryable=%v, want ok=%v kind=%q attempts=%d retryable=%v (message %q, warnings %q)",
			res.OK, res.Kind, res.Attempts, res.Retryable, want.ok, want.kind, want.attempts, want.retryable, res.Message, res.Warnings)
	}
	if want.isolation == nil {
		want.isolation = []sandbox.Isolation{}
	}
	if !slices.Equal(res.AttemptIsolation, want.isolation) {
		t.Errorf("attemptIsolation %v, want %v", res.AttemptIsolation, want.isolation)
	}
	if n := len(want.isolation); n > 0 && res.Isolation != want.isolation[n-1] {
		t.Errorf("isolation %q, want the last attempt's %q", res.Isolation, want.isolation[n-1])
	}
}

// hasWarning reports whether a warning contains phrase.
func hasWarning(res Result, phrase string) bool {
	return slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, phrase) })
}

func wantWarning(t *testing.T, res Result, phrase string) {
	t.Helper()
	if !hasWarning(res, phrase) {
		t.Errorf("no warning contains %q: %q", phrase, res.Warnings)
	}
}

func wantContains(t *testing.T, what, s, phrase string) {
	t.Helper()
	if !strings.Contains(s, phrase) {
		t.Errorf("%s %q does not contain %q", what, s, phrase)
	}
}

// leaks reports whether a secret appears anywhere in the result.
func leaks(t *testing.T, res Result, secrets ...string) []string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			found = append(found, s)
		}
	}
	return found
}

// envOf returns the value of name in a spec's environment.
func envOf(spec sandbox.Spec, name string) string {
	for _, kv := range spec.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
