//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// launchMissing: the host CLI or the Docker image/engine is missing → launch_failed with the
// fix, and Docker never falls back to the host.
func launchMissing(t *testing.T, w *world) {
	if w.iso == host {
		w2 := newWorld(t, host, worldOpts{args: []string{"--cline", filepath.Join(w.root, "no-such-cline")}})
		res, sc := w2.call("ask_cline", map[string]any{"prompt": "hello there"})
		wantResult(t, res, sc, "launch_failed", 1)
		if !strings.Contains(mcpsession.Str(sc, "message"), "npm install -g cline") {
			t.Errorf("got message %q, want the fix (npm install -g cline)", mcpsession.Str(sc, "message"))
		}
		return
	}
	w2 := newWorld(t, docker, worldOpts{args: []string{"--docker-image", "cline-mcp/no-such-image:nope"}})
	res, sc := w2.call("ask_cline", map[string]any{"prompt": "hello there"})
	wantResult(t, res, sc, "launch_failed", 0)
	if !strings.Contains(mcpsession.Str(sc, "message"), "make image") {
		t.Errorf("got message %q, want the fix (make image)", mcpsession.Str(sc, "message"))
	}
	w3 := newWorld(t, docker, worldOpts{env: []string{"DOCKER_HOST=unix://" + filepath.Join(w.root, "dead.sock")}})
	res, sc = w3.call("ask_cline", map[string]any{"prompt": "hello there"})
	wantResult(t, res, sc, "launch_failed", 0)
	if !strings.Contains(mcpsession.Str(sc, "message"), "Docker engine") {
		t.Errorf("got message %q, want it to name the Docker engine", mcpsession.Str(sc, "message"))
	}
	if n := len(w2.records()) + len(w3.records()); n != 0 {
		t.Errorf("the CLI ran on the host %d time(s): Docker must never fall back silently", n)
	}
}

// commitGuard: on the host a commit is reported with the evidence and the undo; in a container
// the read-only .git makes the commit impossible and only the edit comes back.
func commitGuard(t *testing.T, w *world, sc map[string]any) {
	g, _ := sc["git"].(map[string]any)
	if w.iso == host {
		if mcpsession.Str(g, "headBefore") == "" || mcpsession.Str(g, "headAfter") == mcpsession.Str(g, "headBefore") {
			t.Errorf("git evidence does not show HEAD moving: %v", g)
		}
		if !json.Valid([]byte(strings.TrimSpace(w.lastText))) {
			t.Errorf("apply's error text is not the JSON object")
		}
		return
	}
	if mcpsession.Str(sc, "headBefore") == "" || mcpsession.Str(sc, "headBefore") != mcpsession.Str(sc, "headAfter") {
		t.Errorf("HEAD moved in a container with a read-only .git: %v → %v", sc["headBefore"], sc["headAfter"])
	}
	if files := mcpsession.ChangedFiles(sc); files["c.txt"] != "A" {
		t.Errorf("the container's edit was not reported: %v", files)
	}
}

// applyDiff: the diff is exactly the run's changes; the user's own work is kept and not
// reported; files made in a container belong to the caller.
func applyDiff(t *testing.T, w *world) {
	repo := w.repo("r", map[string]string{"README.md": "hello\n", "old.txt": "old\n", "gone.txt": "bye\n", "user.txt": "mine\n"})
	if err := os.WriteFile(filepath.Join(repo, "user.txt"), []byte("mine, edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("untracked notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, sc := w.call("apply_cline_edits", map[string]any{"cwd": repo,
		"prompt": "Edit fake:edit_many?modify=README.md&create=new_file.txt&delete=gone.txt&rename=old.txt:renamed.txt"})
	wantResult(t, res, sc, "", 1)
	files := mcpsession.ChangedFiles(sc)
	for p, st := range map[string]string{"README.md": "M", "new_file.txt": "A", "gone.txt": "D", "renamed.txt": "R"} {
		if files[p] != st {
			t.Errorf("changedFiles[%s] = %q, want %q (all %v)", p, files[p], st, files)
		}
	}
	if _, ok := files["user.txt"]; ok {
		t.Errorf("the user's own change was reported as Cline's: %v", files)
	}
	if _, ok := files["notes.txt"]; ok {
		t.Errorf("the user's untracked file was reported as Cline's: %v", files)
	}
	if d := mcpsession.Str(sc, "diff"); !strings.Contains(d, "new_file.txt") || strings.Contains(d, "user.txt") {
		t.Errorf("diff is not exactly the run's changes:\n%s", d)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "user.txt")); string(b) != "mine, edited\n" {
		t.Errorf("the user's uncommitted change was lost: %q", b)
	}
	st, err := os.Stat(filepath.Join(repo, "new_file.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := fileUID(st); uid != os.Getuid() {
		t.Errorf("new_file.txt is owned by uid %d, want the caller's %d", uid, os.Getuid())
	}
}

// workspaceCleanup: the disposable worktree is removed after success and after a timeout.
func workspaceCleanup(t *testing.T, w *world) {
	repo := committedRepo(w)
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := gitRun(t, repo, "rev-parse", "HEAD")
	res, sc := w.call("ask_cline_workspace", map[string]any{"cwd": repo, "prompt": "Read fake:read?path=README.md"})
	wantResult(t, res, sc, "", 1)
	wt, _ := sc["worktree"].(map[string]any)
	if mcpsession.Str(wt, "commit") != head || wt["removed"] != true {
		t.Errorf("got worktree %v, want commit %s removed", wt, head)
	}
	res, sc = w.call("ask_cline_workspace", map[string]any{"cwd": repo, "prompt": "go fake:hang", "timeoutSeconds": 1})
	wantResult(t, res, sc, "timeout", 1)
	if wts, _ := worktrees(repo); len(wts) != 1 {
		t.Errorf("worktrees left after a timeout: %v", wts)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "README.md")); string(b) != "uncommitted\n" {
		t.Errorf("the user's uncommitted change was touched: %q", b)
	}
}

// workspacePool: with --workspace-pool 1 a run that modified, deleted and created files (directly,
// as a run ignoring the analysis policy would) leaves the worktree to the next call, which finds
// it at HEAD again: every step of the same attack succeeds once more (the deleted file is back,
// the symlink gone). The world's close proves the pool is removed when the server exits.
func workspacePool(t *testing.T, w *world) {
	repo := committedRepo(w)
	for i := range 3 {
		res, sc := w.call("ask_cline_workspace", map[string]any{"cwd": repo, "prompt": "Leftovers fake:attack_leftovers"})
		wantResult(t, res, sc, "", 1)
		wt, _ := sc["worktree"].(map[string]any)
		if wt["reused"] != (i > 0) || wt["pooled"] != true || wt["removed"] != false {
			t.Errorf("call %d: worktree %v, want reused %v and pooled", i, wt, i > 0)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
			t.Fatalf("call %d: report %q: %v", i, sc["text"], err)
		}
		for _, step := range []string{"marker", "modify", "delete", "create", "ignored", "link"} {
			if rep[step] != "ok" {
				t.Errorf("call %d: step %s: %v (the worktree was not at HEAD)", i, step, rep[step])
			}
		}
	}
	if wts, _ := worktrees(repo); len(wts) != 2 {
		t.Errorf("worktrees while the server runs: %v, want main and the pooled one", wts)
	}
}

// cleanupFailed makes a file in the worktree immutable (chattr +i: even root cannot delete it)
// while Cline runs, so the removal fails: workspace_cleanup_failed with the answer and the
// leftover path. The test then undoes it and removes the worktree itself.
func cleanupFailed(t *testing.T, w *world) {
	if _, err := exec.LookPath("chattr"); err != nil {
		t.Skip("chattr not installed")
	}
	repo := committedRepo(w)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan struct{})
	var sc map[string]any
	var isErr bool
	go func() {
		defer close(done)
		res, err := w.sess.CallErr(ctx, "ask_cline_workspace", map[string]any{"cwd": repo, "prompt": "go fake:slow?seconds=4&interval_ms=500"}, nil)
		if err == nil {
			isErr = res.IsError
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &sc)
		}
	}()
	var wt string
	if !mcpsession.Eventually(30*time.Second, func() bool {
		wts, _ := worktrees(repo)
		if len(wts) == 2 {
			wt = wts[1]
		}
		return wt != ""
	}) {
		t.Fatal("the worktree never appeared")
	}
	stuck := filepath.Join(wt, "stuck.txt")
	if err := os.WriteFile(stuck, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", stuck).CombinedOutput(); err != nil {
		t.Skipf("chattr +i not supported here: %v %s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("chattr", "-i", stuck).Run()
		_, _ = gitCmd(repo, "worktree", "remove", "--force", wt)
		_, _ = gitCmd(repo, "worktree", "prune")
		entries, _ := filepath.Glob(filepath.Join(w.tmp, "cline-mcp-worktrees", "*"))
		for _, e := range entries {
			_ = os.RemoveAll(e)
		}
	})
	<-done
	if sc == nil {
		t.Fatal("no result")
	}
	if !isErr || mcpsession.Str(sc, "kind") != "workspace_cleanup_failed" {
		t.Fatalf("got %v %v, want workspace_cleanup_failed", sc["kind"], sc["message"])
	}
	if msg := mcpsession.Str(sc, "message"); !strings.Contains(msg, wt) || !strings.Contains(msg, "tick") {
		t.Errorf("message %q should name the leftover %s and carry Cline's answer", msg, wt)
	}
	if rep, _ := sc["worktree"].(map[string]any); rep["removed"] != false {
		t.Errorf("worktree report %v, want removed false", rep)
	}
}

// inspectionFailed: the bridge cannot inspect the checkout. On the host Cline itself corrupts
// .git/index during the run (after evidence fails: the answer is kept in the message); in a
// container .git is read-only, so the index is corrupted before the call (Cline is not started).
func inspectionFailed(t *testing.T, w *world) {
	repo := committedRepo(w)
	index := filepath.Join(repo, ".git", "index")
	if w.iso == host {
		res, sc := w.call("apply_cline_edits", map[string]any{"cwd": repo, "prompt": "Break fake:edit?path=.git/index&content=garbage"})
		wantResult(t, res, sc, "edits_inspection_failed", 1)
		if !strings.Contains(mcpsession.Str(sc, "message"), "Cline finished") {
			t.Errorf("got message %q, want the after-run inspection failure", mcpsession.Str(sc, "message"))
		}
		return
	}
	if err := os.WriteFile(index, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, sc := w.call("apply_cline_edits", map[string]any{"cwd": repo, "prompt": "Edit fake:edit?path=x.txt"})
	wantResult(t, res, sc, "edits_inspection_failed", 0)
	if !strings.Contains(mcpsession.Str(sc, "message"), "Cline was not started") {
		t.Errorf("got message %q, want the before-run inspection failure", mcpsession.Str(sc, "message"))
	}
	if _, err := os.Stat(filepath.Join(repo, "x.txt")); err == nil {
		t.Errorf("Cline ran although the checkout could not be inspected")
	}
}

// overrideRestore: a provider/model override never reaches the user's file (the run works on a
// private copy, on the host as in a container); the token a host run refreshed is merged back, a
// container's never is (nothing about credentials comes back from a container); the file stays 0600.
func overrideRestore(t *testing.T, w *world) {
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply fake:token_refresh?token=tok-" + w.iso,
		"provider": "openai-native", "model": "gpt-override"})
	wantResult(t, res, sc, "", 1)
	p := w.readProviders()
	token := any("tok-" + w.iso)
	if w.iso != host {
		token = "tok-saved" // mcpsession.ProvidersTwo's
	}
	for path, want := range map[string]any{
		"lastUsedProvider":                                  "openai-compatible",
		"providers/openai-native/settings/model":            "gpt-saved",
		"providers/openai-native/settings/reasoning/effort": "low",
		"providers/openai-native/settings/auth/accessToken": token,
		"providers/openai-compatible/settings/apiKey":       "sk-test-123",
	} {
		if got := mcpsession.Dig(p, strings.Split(path, "/")...); got != want {
			t.Errorf("%s: got %v, want %v", path, got, want)
		}
	}
	if st, err := os.Stat(w.providers); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("providers.json mode: %v %v, want 0600", st.Mode().Perm(), err)
	}
}
