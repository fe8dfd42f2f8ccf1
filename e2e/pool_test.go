//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/filetree"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// The worktree pool through the built server (--workspace-pool): a reused worktree holds exactly
// HEAD whatever the previous run left in it, a tampered one is discarded, and none outlives the
// server or its idle time. The Docker variants are in pool_e2e_test.go.

var poolRepo = map[string]string{
	"README.md":   "committed\n",
	"src/a.go":    "package a\n",
	"src/b.go":    "package a // b\n",
	".gitignore":  "*.log\n",
	"doc/text.md": "text\n",
}

// workTree describes a checkout as a user sees it (filetree.Describe).
func workTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out, err := filetree.Describe(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func wantTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for _, d := range filetree.Diff(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

func worktreeReport(t *testing.T, sc map[string]any) map[string]any {
	t.Helper()
	wt, ok := sc["worktree"].(map[string]any)
	if !ok {
		t.Fatalf("no worktree report in %v", sc)
	}
	return wt
}

// wantPool asserts the reused/pooled/removed flags of a workspace result.
func wantPool(t *testing.T, sc map[string]any, reused, pooled bool) {
	t.Helper()
	wt := worktreeReport(t, sc)
	if wt["reused"] != reused || wt["pooled"] != pooled || wt["removed"] != !pooled {
		t.Errorf("worktree report %v: want reused %v, pooled %v, removed %v", wt, reused, pooled, !pooled)
	}
}

func warned(sc map[string]any, sub string) bool {
	return strings.Contains(fmt.Sprint(sc["warnings"]), sub)
}

func (e *env) lastCwd() string {
	e.t.Helper()
	rs := e.records()
	return rs[len(rs)-1].Cwd
}

// noWorktreesLeft waits for the repository and the worktree root to hold nothing of ours.
func (e *env) noWorktreesLeft(why string) {
	t := e.t
	t.Helper()
	dirs := func() []string {
		m, _ := filepath.Glob(filepath.Join(e.root, "tmp", "cline-mcp-worktrees", "*"))
		return m
	}
	if !mcpsession.Eventually(20*time.Second, func() bool { return len(worktreeList(t, e.work)) == 1 && len(dirs()) == 0 }) {
		t.Errorf("%s: worktrees %v, dirs %v", why, worktreeList(t, e.work), dirs())
	}
}

// TestWorkspacePoolReuseAfterLeftovers: a run that ignored the read-only policy (host mode is no
// sandbox) modified, deleted and created tracked, untracked and ignored files and planted a
// symlink; the next call reuses the worktree and its run finds every step possible again — the
// deleted file is back, the symlink gone — and the idle worktree holds exactly HEAD. A run that
// commits moves the worktree's HEAD: that worktree is discarded, and the next call gets a fresh
// one. Closing the session removes the pool.
func TestWorkspacePoolReuseAfterLeftovers(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, poolRepo)
	e.start("--workspace-pool", "1")
	head := workTree(t, e.work)
	outside := filepath.Join(e.root, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outside, "keep.txt"), "keep\n")
	args := func(prompt string) map[string]any { return map[string]any{"prompt": prompt, "cwd": e.work} }
	leftovers := "Go fake:attack_leftovers?target=" + outside

	res, sc := e.call("ask_cline_workspace", args(leftovers))
	mcpsession.WantOK(t, res, sc)
	if rep := report(t, sc); rep["delete"] != "ok" || rep["link"] != "ok" || rep["ignored"] != "ok" {
		t.Fatalf("the run could not change the worktree: %v", rep)
	}
	wantPool(t, sc, false, true)
	first := e.lastCwd()

	res, sc = e.call("ask_cline_workspace", args(leftovers))
	mcpsession.WantOK(t, res, sc)
	wantPool(t, sc, true, true)
	if got := e.lastCwd(); got != first {
		t.Errorf("second call ran in %s, want the pooled %s", got, first)
	}
	// Every step succeeded again: src/a.go was back (delete), the symlink was gone (link).
	if rep := report(t, sc); rep["delete"] != "ok" || rep["link"] != "ok" {
		t.Errorf("the reused worktree kept the previous run's changes: %v", rep)
	}

	res, sc = e.call("ask_cline_workspace", args("Read fake:read?path=README.md"))
	mcpsession.WantOK(t, res, sc)
	wantPool(t, sc, true, true)
	wantTree(t, "the idle pooled worktree", workTree(t, first), head)
	if got := workTree(t, outside); len(got) != 1 || !strings.Contains(got["keep.txt"], "keep") {
		t.Errorf("the symlink's target was touched: %v", got)
	}

	// probe_git reports the status git sees in the reused worktree, then commits there.
	res, sc = e.call("ask_cline_workspace", args("Git fake:probe_git"))
	mcpsession.WantOK(t, res, sc)
	rep := report2(t, sc)
	if st := fmt.Sprint(mcpsession.Dig(rep, "status", "output")); strings.TrimSpace(st) != "" {
		t.Errorf("git status in the reused worktree: %q, want clean", st)
	}
	if mcpsession.Dig(rep, "commit", "ok") != true {
		t.Fatalf("the probe could not commit on the host: %v", rep)
	}
	wantPool(t, sc, true, false)
	if !warned(sc, "git metadata changed during the run") {
		t.Errorf("warnings %v: want the discard explained", sc["warnings"])
	}
	if exists(first) {
		t.Errorf("the worktree whose HEAD moved is still there")
	}

	res, sc = e.call("ask_cline_workspace", args("Read fake:read?path=README.md"))
	mcpsession.WantOK(t, res, sc)
	wantPool(t, sc, false, true)
	wantTree(t, "a fresh pooled worktree", workTree(t, e.lastCwd()), head)

	if !e.sess.Stop() {
		t.Errorf("the server did not exit cleanly")
	}
	e.noWorktreesLeft("after the server exited")
}

// report2 parses a probe's JSON answer (probes have no marker step).
func report2(t *testing.T, sc map[string]any) map[string]any {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
		t.Fatalf("probe report %q: %v", sc["text"], err)
	}
	return rep
}

// TestWorkspacePoolDiscardsTampered: a run that redirected the worktree's .git pointer to a
// planted git dir gets its worktree removed (by the recorded paths, nothing planted runs), and a
// nested repository planted in the files makes the next call discard the worktree and start
// fresh, with a warning.
func TestWorkspacePoolDiscardsTampered(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, poolRepo)
	e.start("--workspace-pool", "1")
	marker, cmd := hostMarker(t, e)
	args := func(prompt string) map[string]any { return map[string]any{"prompt": prompt, "cwd": e.work} }

	res, sc := e.call("ask_cline_workspace", args("Redirect fake:attack_redirect?gitfile=plant&gitdir=plant&"+cmd))
	mcpsession.WantOK(t, res, sc)
	if rep := report(t, sc); rep["gitfile"] != "ok" {
		t.Fatalf("the attack could not rewrite the pointer: %v", rep)
	}
	wantPool(t, sc, false, false)
	if !warned(sc, "git metadata changed during the run") {
		t.Errorf("warnings %v: want the discard explained", sc["warnings"])
	}
	first := e.lastCwd()
	if exists(first) {
		t.Errorf("the redirected worktree %s is still there", first)
	}

	res, sc = e.call("ask_cline_workspace", args("Plant fake:attack_nested_repo?dir=src&"+cmd))
	mcpsession.WantOK(t, res, sc)
	wantPool(t, sc, false, true)
	planted := e.lastCwd()
	res, sc = e.call("ask_cline_workspace", args("Read fake:read?path=README.md"))
	mcpsession.WantOK(t, res, sc)
	wantPool(t, sc, false, true)
	if !warned(sc, "failed its check before the run") || !warned(sc, "a .git was planted") {
		t.Errorf("warnings %v: want the replaced pooled worktree explained", sc["warnings"])
	}
	if got := e.lastCwd(); got == planted || exists(planted) {
		t.Errorf("the worktree with a planted repository was reused or left behind (%s)", planted)
	}
	if exists(marker) {
		t.Fatalf("a program the run planted ran on the host")
	}
	if !e.sess.Stop() {
		t.Errorf("the server did not exit cleanly")
	}
	e.noWorktreesLeft("after the server exited")
}

// TestWorkspacePoolExpiresAndConcurrentCallsShareNothing: two calls at once run in two
// worktrees; both are pooled (--workspace-pool 2) and removed after --workspace-pool-idle.
func TestWorkspacePoolExpiresAndConcurrentCallsShareNothing(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, poolRepo)
	e.start("--workspace-pool", "2", "--workspace-pool-idle", "1s")
	var wg sync.WaitGroup
	scs := make([]map[string]any, 2)
	for i := range scs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			res := e.sess.Call(ctx, "ask_cline_workspace", map[string]any{"prompt": "Slowly fake:slow?seconds=2&interval_ms=200", "cwd": e.work})
			scs[i] = res.StructuredContent.(map[string]any)
		})
	}
	wg.Wait()
	for _, sc := range scs {
		if sc["ok"] != true {
			t.Fatalf("call failed: %v", sc)
		}
		wantPool(t, sc, false, true)
	}
	rs := e.records()
	if len(rs) != 2 || rs[0].Cwd == rs[1].Cwd {
		t.Fatalf("two concurrent calls ran in %v, want two worktrees", []string{rs[0].Cwd, rs[len(rs)-1].Cwd})
	}
	if got := len(worktreeList(t, e.work)); got != 3 {
		t.Errorf("worktrees: %d, want main and two idle", got)
	}
	e.noWorktreesLeft("after the idle time")
}

// poolStateReport checks a probe_pool_state answer: no read hung, nothing odd left.
func poolStateReport(t *testing.T, sc map[string]any) {
	t.Helper()
	rep := report2(t, sc)
	reads, _ := rep["reads"].(map[string]any)
	if len(reads) == 0 {
		t.Fatalf("the probe read nothing: %v", rep)

	}
	for p, r := range reads {
		if r == "hung" {
			t.Errorf("reading %s in the reused worktree hung: an earlier run's FIFO was left there", p)
		}
	}
	if odd, _ := rep["odd"].([]any); len(odd) > 0 {
		t.Errorf("the reused worktree holds what an earlier run left: %v", odd)
	}
}

// TestWorkspacePoolStateGitDoesNotUndo: a run that ignored the read-only policy planted FIFOs (one
// where a tracked file was), a unix socket, a hard link, group/other-writable and set-id bits; the
// next call reuses the worktree, none of it is left (a blocking read of each planted path
// returns), and a warning names what was found.
func TestWorkspacePoolStateGitDoesNotUndo(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, poolRepo)
	e.start("--workspace-pool", "1")
	head := workTree(t, e.work)
	args := func(prompt string) map[string]any { return map[string]any{"prompt": prompt, "cwd": e.work} }

	res, sc := e.call("ask_cline_workspace", args("Plant fake:attack_pool_state"))
	mcpsession.WantOK(t, res, sc)
	rep := report(t, sc)
	for _, step := range []string{"fifo", "fifo_tracked", "socket", "link", "chmod", "setuid", "dir"} {
		if rep[step] != "ok" {
			t.Fatalf("the attack's %s step did not happen: %v", step, rep)
		}
	}
	wantPool(t, sc, false, true)
	first := e.lastCwd()

	res, sc = e.call("ask_cline_workspace", args("Probe fake:probe_pool_state"))
	mcpsession.WantOK(t, res, sc)
	wantPool(t, sc, true, true)
	if got := e.lastCwd(); got != first {
		t.Errorf("second call ran in %s, want the pooled %s", got, first)
	}
	poolStateReport(t, sc)
	for _, w := range []string{"git does not undo", `"notes.fifo": a FIFO`, `"agent.sock": a unix socket`, `"src": directory mode`} {
		if !warned(sc, w) {
			t.Errorf("warnings %v: want %q", sc["warnings"], w)
		}
	}
	wantTree(t, "the idle pooled worktree", workTree(t, first), head)
	if !e.sess.Stop() {
		t.Errorf("the server did not exit cleanly")
	}
	e.noWorktreesLeft("after the server exited")
}
