//go:build e2e && unix

package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// touchedPaths is the worktree report's touched list as path → status.
func touchedPaths(t *testing.T, sc map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	list, _ := worktreeReport(t, sc)["touched"].([]any)
	for _, f := range list {
		m, _ := f.(map[string]any)
		out[mcpsession.Str(m, "path")] = mcpsession.Str(m, "status")
	}
	return out
}

// TestDockerWorkspacePoolReuse: in a container the analysis keeps run_commands, and a hostile run
// writes the mounted worktree directly. After runs that modified, deleted and created tracked,
// untracked and ignored files, the next call reuses the worktree and its touched report holds
// only its own changes — it started from exactly HEAD. The read-only mounts stop a redirect of
// the worktree's pointers, so that worktree stays in the pool; a nested repository planted in
// the files is found when the worktree is taken again, and it is replaced.
func TestDockerWorkspacePoolReuse(t *testing.T) {
	e := newDockerEnv(t, "--workspace-pool", "1")
	gitInit(t, e.work, poolRepo)
	head := workTree(t, e.work)
	call := func(prompt string) map[string]any {
		t.Helper()
		sc, _ := dockerCall(e, "ask_cline_workspace", map[string]any{"prompt": prompt, "cwd": e.work})
		wantDockerOK(t, sc)
		return sc
	}
	cmds := url.Values{"cmd": {"rm src/a.go", "cp src/b.go README.md", "touch new.txt", "touch debug.log", "mkdir -p build/out", "cp doc/text.md build/out/x.log"}}
	sc := call("Commands fake:run_commands?" + cmds.Encode())
	wantPool(t, sc, false, true)
	if got := touchedPaths(t, sc); got["src/a.go"] != "D" || got["README.md"] != "M" || got["new.txt"] != "A" {
		t.Errorf("first run's touched report %v: want src/a.go D, README.md M, new.txt A", got)
	}

	sc = call("Leftovers fake:attack_leftovers?target=/etc")
	wantPool(t, sc, true, true)
	if rep := report(t, sc); rep["delete"] != "ok" || rep["modify"] != "ok" || rep["link"] != "ok" {
		t.Errorf("the reused worktree was not HEAD for the run: %v", rep)
	}
	want := map[string]string{"README.md": "M", "src/a.go": "D", "new_file.txt": "A", "outside": "A", "fake-cline-attack-attack_leftovers.txt": "A"}
	if got := touchedPaths(t, sc); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("touched report of the reused worktree: got %v, want only this run's %v", got, want)
	}

	sc = call("Redirect fake:attack_redirect?gitfile=/tmp/x&gitdir=/tmp/y&commondir=/tmp/z")
	wantPool(t, sc, true, true)
	if rep := report(t, sc); rep["gitfile"] == "ok" || rep["gitdir"] == "ok" || rep["commondir"] == "ok" {
		t.Errorf("a pointer was rewritten through the read-only mounts: %v", rep)
	}

	sc = call("Plant fake:attack_nested_repo?dir=src")
	wantPool(t, sc, true, true)
	sc = call("Read fake:read?path=README.md")
	wantPool(t, sc, false, true)
	if !warned(sc, "a .git was planted") {
		t.Errorf("warnings %v: want the replaced pooled worktree explained", sc["warnings"])
	}
	idle := mustGlob(t, filepath.Join(e.root, "tmp", "cline-mcp-worktrees", "*", "wt"))
	if len(idle) != 1 {
		t.Fatalf("idle worktrees %v, want one", idle)
	}
	wantTree(t, "the idle pooled worktree", workTree(t, idle[0]), head)
	if !e.sess.Stop() {
		t.Errorf("the server did not exit cleanly")
	}
	e.noWorktreesLeft("after the server exited")
}

// TestDockerWorkspacePoolGitStatusClean: git inside the container sees a clean checkout of HEAD
// in a reused worktree, and its failed commit (read-only git dir) does not cost the worktree.
func TestDockerWorkspacePoolGitStatusClean(t *testing.T) {
	if gitImageErr != nil {
		t.Skipf("!!! SKIPPED: %v", gitImageErr)
	}
	e := newDockerEnv(t, "--docker-image", mcpsession.FakeImageGit, "--workspace-pool", "1")
	gitInit(t, e.work, poolRepo)
	cmds := url.Values{"cmd": {"rm src/a.go", "touch new.txt", "touch debug.log"}}
	sc, _ := dockerCall(e, "ask_cline_workspace", map[string]any{"prompt": "Commands fake:run_commands?" + cmds.Encode(), "cwd": e.work})
	wantDockerOK(t, sc)
	for range 2 {
		sc, _ = dockerCall(e, "ask_cline_workspace", map[string]any{"prompt": "Probe fake:probe_git", "cwd": e.work})
		wantDockerOK(t, sc)
		wantPool(t, sc, true, true)
		var rep map[string]map[string]any
		if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
			t.Fatalf("probe report %q: %v", sc["text"], err)
		}
		if rep["status"]["ok"] != true || strings.TrimSpace(fmt.Sprint(rep["status"]["output"])) != "" {
			t.Errorf("git status in the reused worktree: %v, want clean", rep["status"])
		}
		if rep["commit"]["ok"] == true {
			t.Errorf("a commit succeeded inside the container: %v", rep["commit"])
		}
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		t.Fatalf("nothing matches %s (%v)", pattern, err)
	}
	return m
}

// TestDockerWorkspacePoolState: a container run planted FIFOs (one where a tracked file was), a
// unix socket, a hard link, group/other-writable and set-id bits in the mounted worktree. Its
// touched report lists them; the next call reuses the worktree, finds none of it (a blocking
// read of each planted path returns at once) and is warned what was removed.
func TestDockerWorkspacePoolState(t *testing.T) {
	e := newDockerEnv(t, "--workspace-pool", "1")
	gitInit(t, e.work, poolRepo)
	head := workTree(t, e.work)
	call := func(prompt string) map[string]any {
		t.Helper()
		sc, _ := dockerCall(e, "ask_cline_workspace", map[string]any{"prompt": prompt, "cwd": e.work})
		wantDockerOK(t, sc)
		return sc
	}
	sc := call("Plant fake:attack_pool_state")
	rep := report(t, sc)
	for _, step := range []string{"fifo", "fifo_tracked", "socket", "link", "chmod", "setuid", "dir"} {
		if rep[step] != "ok" {
			t.Fatalf("the attack's %s step did not happen in the container: %v", step, rep)
		}
	}
	wantPool(t, sc, false, true)
	touched := touchedPaths(t, sc)
	for p, st := range map[string]string{"notes.fifo": "A", "doc/text.md": "T", "agent.sock": "A", "src/b.go": "M", "README.md": "M", "src/a.go": "M"} {
		if touched[p] != st {
			t.Errorf("touched report %v: want %s %s", touched, p, st)
		}
	}

	sc = call("Probe fake:probe_pool_state")
	wantPool(t, sc, true, true)
	poolStateReport(t, sc)
	for _, w := range []string{"git does not undo", `"notes.fifo": a FIFO`, `"agent.sock": a unix socket`, `"src/b.go": a hard link`} {
		if !warned(sc, w) {
			t.Errorf("warnings %v: want %q", sc["warnings"], w)
		}
	}
	idle := mustGlob(t, filepath.Join(e.root, "tmp", "cline-mcp-worktrees", "*", "wt"))
	if len(idle) != 1 {
		t.Fatalf("idle worktrees %v, want one", idle)
	}
	wantTree(t, "the idle pooled worktree", workTree(t, idle[0]), head)
	if !e.sess.Stop() {
		t.Errorf("the server did not exit cleanly")
	}
	e.noWorktreesLeft("after the server exited")
}
