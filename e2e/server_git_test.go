package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return strings.TrimSpace(string(b))
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestApplyReturnsExactlyTheRunsChanges(t *testing.T) {
	e := newEnv(t)
	repo := e.work
	gitInit(t, repo, map[string]string{"README.md": "hello\n", "old.txt": "old\n", "gone.txt": "bye\n", "user.txt": "mine\n"})
	// The user's own uncommitted work: must survive and must not be reported as Cline's.
	writeFile(t, filepath.Join(repo, "user.txt"), "mine, edited by the user\n")
	writeFile(t, filepath.Join(repo, "scratch.txt"), "user's untracked notes\n")
	gitOut(t, repo, "add", "user.txt")
	statusBefore := gitOut(t, repo, "status", "--porcelain")

	res, sc := e.call("apply_cline_edits", map[string]any{
		"prompt": "Edit things fake:edit_many?modify=README.md&create=new_file.txt&delete=gone.txt&rename=old.txt:renamed.txt",
		"cwd":    repo,
	})
	mcpsession.WantOK(t, res, sc)
	files := mcpsession.ChangedFiles(sc)
	want := map[string]string{"README.md": "M", "new_file.txt": "A", "gone.txt": "D", "renamed.txt": "R"}
	for p, st := range want {
		if files[p] != st {
			t.Errorf("changedFiles[%s] = %q, want %q (all: %v)", p, files[p], st, files)
		}
	}
	for p := range files {
		if p == "user.txt" || p == "scratch.txt" {
			t.Errorf("the user's pre-existing change %s was reported as Cline's", p)
		}
	}
	diff := mcpsession.Str(sc, "diff")
	for _, frag := range []string{"README.md", "new_file.txt", "gone.txt", "renamed.txt"} {
		if !strings.Contains(diff, frag) {
			t.Errorf("diff lacks %s:\n%s", frag, diff)
		}
	}
	if strings.Contains(diff, "user.txt") || strings.Contains(diff, "scratch.txt") {
		t.Errorf("diff includes the user's own changes:\n%s", diff)
	}
	if mcpsession.ReadFile(t, filepath.Join(repo, "user.txt")) != "mine, edited by the user\n" || mcpsession.ReadFile(t, filepath.Join(repo, "scratch.txt")) != "user's untracked notes\n" {
		t.Errorf("the user's uncommitted work was changed")
	}
	if !strings.Contains(gitOut(t, repo, "diff", "--cached", "--name-only"), "user.txt") {
		t.Errorf("the user's staged change was unstaged")
	}
	if mcpsession.Str(sc, "headBefore") == "" || mcpsession.Str(sc, "headBefore") != mcpsession.Str(sc, "headAfter") {
		t.Errorf("headBefore %q headAfter %q", mcpsession.Str(sc, "headBefore"), mcpsession.Str(sc, "headAfter"))
	}
	_ = statusBefore
	if !strings.Contains(mcpsession.Text(res), "Changed files:") {
		t.Errorf("text lacks the changed files: %s", mcpsession.Text(res))
	}
	// apply runs with auto-approve and no disabled tools.
	r := e.records()[0]
	if !hasPair(r.Argv, "--auto-approve", "true") || r.Env["CLINE_GLOBAL_SETTINGS_PATH"] != "" {
		t.Errorf("apply must auto-approve without a restricted policy: argv %q env %v", r.Argv, r.Env)
	}
}

func TestApplyCommitIsReported(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	head := gitOut(t, e.work, "rev-parse", "HEAD")
	res, sc := e.call("apply_cline_edits", map[string]any{"prompt": "Commit please fake:commit?path=c.txt&message=sneaky", "cwd": e.work})
	mcpsession.WantKind(t, res, sc, "commit_created")
	msg := mcpsession.Str(sc, "message")
	if !strings.Contains(msg, head) || !strings.Contains(msg, "git reset --soft") {
		t.Errorf("message lacks the old HEAD and the undo command: %s", msg)
	}
	g, _ := sc["git"].(map[string]any)
	if mcpsession.Str(g, "headBefore") != head || mcpsession.Str(g, "headAfter") == head || mcpsession.Str(g, "headAfter") == "" {
		t.Errorf("git evidence wrong: %v", g)
	}
	// Text of apply errors is JSON (seed).
	var m map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Text(res)), &m); err != nil || m["kind"] != "commit_created" {
		t.Errorf("apply error text is not the JSON object: %v %.200s", err, mcpsession.Text(res))
	}
	if gitOut(t, e.work, "rev-parse", "HEAD") == head {
		t.Fatalf("the fake did not commit; the test proves nothing")
	}
}

func TestApplyEditThenTransientNotRetried(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	// An edit followed by a transient provider error: retrying could repeat the edit.
	res, sc := e.call("apply_cline_edits", map[string]any{"prompt": "Edit then fail fake:edit_then_fail?path=x.txt", "cwd": e.work})
	mcpsession.WantKind(t, res, sc, "transient_provider_error")
	if mcpsession.Num(sc, "attempts") != 1 {
		t.Errorf("got attempts %v, want 1", sc["attempts"])
	}
	if n := len(e.records()); n != 1 {
		t.Errorf("got %d CLI runs, want 1", n)
	}
	if !strings.Contains(fmt.Sprint(sc["warnings"]), "not retried") {
		t.Errorf("warnings %v do not say why it was not retried", sc["warnings"])
	}
	if files := mcpsession.ChangedFiles(sc); files["x.txt"] != "A" {
		t.Errorf("the error must carry the evidence: changedFiles %v", files)
	}
	if g, _ := sc["git"].(map[string]any); g == nil {
		t.Errorf("the error lacks the git object")
	}
}

func TestApplyTransientWithoutChangesIsRetried(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	res, sc := e.call("apply_cline_edits", map[string]any{"prompt": "go fake:http_429_then_ok?key=apply", "cwd": e.work})
	mcpsession.WantOK(t, res, sc)
	if mcpsession.Num(sc, "attempts") != 2 {
		t.Errorf("got attempts %v, want 2", sc["attempts"])
	}
}

func TestApplyNotGit(t *testing.T) {
	e := newEnv(t)
	res, sc := e.call("apply_cline_edits", map[string]any{"prompt": "Edit please", "cwd": e.work})
	mcpsession.WantKind(t, res, sc, "workspace_not_git")
	if len(e.records()) != 0 {
		t.Errorf("the CLI was spawned for a non-git cwd")
	}
}

func worktreeList(t *testing.T, repo string) []string {
	out := gitOut(t, repo, "worktree", "list", "--porcelain")
	var wts []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "worktree ") {
			wts = append(wts, strings.TrimPrefix(l, "worktree "))
		}
	}
	return wts
}

func TestWorkspaceRunsInDetachedWorktreeAndRemovesIt(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "committed\n", "sub/a.txt": "a\n"})
	writeFile(t, filepath.Join(e.work, "README.md"), "uncommitted edit\n")
	head := gitOut(t, e.work, "rev-parse", "HEAD")
	res, sc := e.call("ask_cline_workspace", map[string]any{"prompt": "Read it fake:read?path=README.md", "cwd": e.work})
	mcpsession.WantOK(t, res, sc)
	wt, _ := sc["worktree"].(map[string]any)
	if mcpsession.Str(wt, "commit") != head || wt["removed"] != true {
		t.Errorf("worktree report %v, want commit %s removed true", wt, head)
	}
	r := e.records()[0]
	if r.Cwd == e.work || !hasPair(r.Argv, "-c", r.Cwd) {
		t.Errorf("Cline ran in %q (argv %q), want a separate worktree", r.Cwd, r.Argv)
	}
	if _, err := os.Stat(r.Cwd); !os.IsNotExist(err) {
		t.Errorf("the worktree dir %s still exists", r.Cwd)
	}
	if wts := worktreeList(t, e.work); len(wts) != 1 {
		t.Errorf("git worktree list shows %v, want only the main worktree", wts)
	}
	if mcpsession.ReadFile(t, filepath.Join(e.work, "README.md")) != "uncommitted edit\n" {
		t.Errorf("the user's uncommitted change was touched")
	}
	if r.Env["CLINE_GLOBAL_SETTINGS_PATH"] == "" {
		t.Errorf("the workspace tool must use the read-only analysis policy")
	}
}

func TestWorkspaceCleanupAfterTimeoutAndCancel(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	res, sc := e.call("ask_cline_workspace", map[string]any{"prompt": "go fake:hang", "cwd": e.work, "timeoutSeconds": 1})
	mcpsession.WantKind(t, res, sc, "timeout")
	if wts := worktreeList(t, e.work); len(wts) != 1 {
		t.Errorf("after a timeout: worktrees %v", wts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	before := len(e.records())
	go func() {
		defer close(done)
		_, _ = e.sess.CallErr(ctx, "ask_cline_workspace", map[string]any{"prompt": "go fake:hang", "cwd": e.work}, nil)
	}()
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(e.records()) > before }) {
		t.Fatal("the run never started")
	}
	cancel()
	<-done
	if !mcpsession.Eventually(10*time.Second, func() bool { return len(worktreeList(t, e.work)) == 1 }) {
		t.Errorf("after a cancel: worktrees %v", worktreeList(t, e.work))
	}
	wantWithheld(t, e.sess, "")
	for _, r := range e.records() {
		if _, err := os.Stat(r.Cwd); !os.IsNotExist(err) {
			t.Errorf("worktree dir %s left behind", r.Cwd)
		}
	}
}

func TestWorkspaceNotGit(t *testing.T) {
	e := newEnv(t)
	res, sc := e.call("ask_cline_workspace", map[string]any{"prompt": "Read please", "cwd": e.work})
	mcpsession.WantKind(t, res, sc, "workspace_not_git")
}

func TestRepoWithFailingHooksStillWorks(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	hooks := filepath.Join(e.work, ".git", "hooks")
	for _, h := range []string{"post-checkout", "pre-commit", "reference-transaction"} {
		if err := os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	res, sc := e.call("ask_cline_workspace", map[string]any{"prompt": "Read please", "cwd": e.work})
	mcpsession.WantOK(t, res, sc)
	res, sc = e.call("apply_cline_edits", map[string]any{"prompt": "Edit fake:edit?path=h.txt", "cwd": e.work})
	mcpsession.WantOK(t, res, sc)
}
