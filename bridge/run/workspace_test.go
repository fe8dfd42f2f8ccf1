package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// TestWorkspace: ask_cline_workspace acquires a worktree after finding the repository, runs in
// it, lists what the run touched only when it may have written, and always releases it; a
// release that fails turns a success into workspace_cleanup_failed with the answer kept.
func TestWorkspace(t *testing.T) {
	edits := func(t *testing.T) []step { return []step{recorded(t, "b_edit_autoapprove_true")} }
	ok := func(t *testing.T) []step { return []step{pong(t)} }
	touched := []git.FileChange{{Path: "hello.txt", Status: "A"}}
	cases := []struct {
		name     string
		iso      sandbox.Isolation
		steps    func(t *testing.T) []step
		setup    func(h *harness)
		want     result
		events   []string
		message  string
		warnings []string
		report   func(h *harness) *WorktreeReport
	}{
		{name: "not a repository", setup: func(h *harness) { h.git.topErr = fmt.Errorf("x: %w", git.ErrNotGit) },
			steps: func(t *testing.T) []step { return nil }, want: result{kind: "workspace_not_git"},
			events: []string{"git.TopLevel"}, message: "is not inside a git repository"},
		{name: "repository unreadable", setup: func(h *harness) { h.git.topErr = errors.New("git missing") },
			steps: func(t *testing.T) []step { return nil }, want: result{kind: "workspace_setup_failed"},
			events: []string{"git.TopLevel"}, message: "could not inspect the repository: git missing"},
		{name: "acquire finds no repository", setup: func(h *harness) { h.wts.acquireErr = fmt.Errorf("x: %w", git.ErrNotGit) },
			steps: func(t *testing.T) []step { return nil }, want: result{kind: "workspace_not_git"},
			events: []string{"git.TopLevel", "wt.Acquire"}, message: "is not inside a git repository"},
		{name: "acquire fails", setup: func(h *harness) { h.wts.acquireErr = errors.New("disk full") },
			steps: func(t *testing.T) []step { return nil }, want: result{kind: "workspace_setup_failed"},
			events: []string{"git.TopLevel", "wt.Acquire"}, message: "could not create the disposable worktree: disk full"},
		{name: "read-only answer: nothing to list, removed", steps: ok,
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}},
			events: []string{"git.TopLevel", "wt.Acquire", "settings.Begin", "host.Run", "hold.End", "wt.Release"},
			report: func(h *harness) *WorktreeReport { return &WorktreeReport{Commit: "1111111", Removed: true} }},
		{name: "host run that edited: touched listed", steps: edits, setup: func(h *harness) { h.wts.touched = touched },
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}},
			events: []string{"git.TopLevel", "wt.Acquire", "settings.Begin", "host.Run", "hold.End", "wt.Touched", "wt.Release"},
			warnings: []string{"successful editor call during a read-only analysis run",
				"files changed inside the disposable worktree during the analysis (1); they were discarded with it"},
			report: func(h *harness) *WorktreeReport {
				return &WorktreeReport{Commit: "1111111", Removed: true, Touched: []ChangedFile{{Path: "hello.txt", Status: "A"}}}
			}},
		{name: "docker run may have written: touched asked", iso: dock, steps: ok,
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}},
			events: []string{"git.TopLevel", "wt.Acquire", "settings.EnsureFresh", "settings.PrivateCopy", "docker.Run", "settings.MergeAllowed", "copy.Close", "wt.Touched", "wt.Release"},
			report: func(h *harness) *WorktreeReport { return &WorktreeReport{Commit: "1111111", Removed: true} }},
		{name: "pooled with changes", steps: edits, setup: func(h *harness) {
			h.wts.touched, h.wts.released = touched, worktree.Released{Pooled: true}
			h.wts.info.Reused = true
			h.wts.info.Discarded = []error{errors.New("stale index")}
		},
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}},
			events: []string{"git.TopLevel", "wt.Acquire", "settings.Begin", "host.Run", "hold.End", "wt.Touched", "wt.Release"},
			warnings: []string{"a pooled worktree failed its check before the run and was replaced by a fresh one: stale index",
				"the worktree went back to the pool, and they are undone before it is used again"},
			report: func(h *harness) *WorktreeReport {
				return &WorktreeReport{Commit: "1111111", Reused: true, Pooled: true, Touched: []ChangedFile{{Path: "hello.txt", Status: "A"}}}
			}},
		{name: "pooled worktree cleaned: what was found is named", steps: ok, setup: func(h *harness) {
			h.wts.released = worktree.Released{Pooled: true}
			h.wts.info.Reused = true
			h.wts.info.Cleaned = []worktree.Finding{{Path: "notes.txt", What: "a FIFO"}, {Path: "src/a.go", What: "a hard link (2 links)"}}
		},
			want:     result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}},
			events:   []string{"git.TopLevel", "wt.Acquire", "settings.Begin", "host.Run", "hold.End", "wt.Release"},
			warnings: []string{`git does not undo (2 entries); removed or repaired before this run: "notes.txt": a FIFO, "src/a.go": a hard link (2 links)`},
			report: func(h *harness) *WorktreeReport {
				return &WorktreeReport{Commit: "1111111", Reused: true, Pooled: true}
			}},
		{name: "metadata changed: removed instead of pooled", steps: ok,
			setup:    func(h *harness) { h.wts.released = worktree.Released{Discarded: errors.New("HEAD rewritten")} },
			want:     result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}},
			events:   []string{"git.TopLevel", "wt.Acquire", "settings.Begin", "host.Run", "hold.End", "wt.Release"},
			warnings: []string{"git metadata changed during the run (HEAD rewritten)"},
			report:   func(h *harness) *WorktreeReport { return &WorktreeReport{Commit: "1111111", Removed: true} }},
		{name: "cleanup fails after an answer", steps: ok, setup: func(h *harness) { h.wts.releaseErr = errors.New("busy") },
			want:    result{kind: "workspace_cleanup_failed", attempts: 1, isolation: []sandbox.Isolation{host}},
			events:  []string{"git.TopLevel", "wt.Acquire", "settings.Begin", "host.Run", "hold.End", "wt.Release"},
			message: "Cline answered, but the worktree could not be removed",
			report:  func(h *harness) *WorktreeReport { return &WorktreeReport{Commit: "1111111", Path: h.wts.info.Path} }},
		{name: "cleanup fails after a failure", steps: func(t *testing.T) []step { return []step{recorded(t, "e_http_401")} },
			setup:    func(h *harness) { h.wts.releaseErr = errors.New("busy") },
			want:     result{kind: "non_zero_exit", attempts: 1, isolation: []sandbox.Isolation{host}},
			events:   []string{"git.TopLevel", "wt.Acquire", "settings.Begin", "host.Run", "hold.End", "wt.Release"},
			warnings: []string{"the worktree could not be removed (leftover: "},
			report:   func(h *harness) *WorktreeReport { return &WorktreeReport{Commit: "1111111", Path: h.wts.info.Path} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t, tc.steps(t)...)
				if tc.setup != nil {
					tc.setup(h)
				}
				c := h.call(AskClineWorkspace)
				c.Isolation = tc.iso
				res := h.do(t.Context(), c)
				wantResult(t, res, tc.want)
				wantEvents(t, h, tc.events...)
				wantContains(t, "message", res.Message, tc.message)
				for _, w := range tc.warnings {
					wantWarning(t, res, w)
				}
				if tc.want.kind == "workspace_cleanup_failed" && (res.Text != "PONG" || !strings.Contains(res.Message, "Cline's answer: PONG")) {
					t.Errorf("the answer was not kept: text %q message %q", res.Text, res.Message)
				}
				if tc.report == nil {
					if res.Worktree != nil {
						t.Errorf("worktree report %+v before a worktree existed", res.Worktree)
					}
					return
				}
				want := tc.report(h)
				if got := res.Worktree; got == nil || got.Commit != want.Commit || got.Reused != want.Reused || got.Removed != want.Removed ||
					got.Pooled != want.Pooled || got.Path != want.Path || !slices.Equal(got.Touched, want.Touched) {
					t.Errorf("worktree report %+v, want %+v", got, want)
				}
				if runs := h.cli.runs(); len(runs) > 0 && runs[0].Dir != h.wts.info.Path {
					t.Errorf("Cline ran in %s, want the worktree %s", runs[0].Dir, h.wts.info.Path)
				}
			})
		})
	}
}

// TestWorkspaceSubdirectory: a call from a subdirectory of the repository runs in the same
// subdirectory of the worktree.
func TestWorkspaceSubdirectory(t *testing.T) {
	h := newHarness(t, pong(t))
	sub := filepath.Join(h.cwd, "pkg", "a")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	c := h.call(AskClineWorkspace)
	c.Cwd = sub
	res := h.do(t.Context(), c)
	wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
	if got, want := h.cli.runs()[0].Dir, filepath.Join(h.wts.info.Path, "pkg", "a"); got != want {
		t.Errorf("Cline ran in %s, want %s", got, want)
	}
}
