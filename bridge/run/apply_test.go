package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// TestApplyEvidenceOrder: apply_cline_edits records the checkout before anything runs, and
// inspects and compares it after the run (and after the settings are released), on every path;
// what the comparison finds decides the result.
func TestApplyEvidenceOrder(t *testing.T) {
	committed := git.Change{HeadBefore: "1111111", HeadAfter: "2222222", HeadMoved: true, CommitCreated: true,
		Refs: []git.RefChange{{Name: "refs/heads/main", Old: "1111111", New: "2222222"}, {Name: "refs/tags/v1", New: "3333333"}},
		Undo: []string{"git reset --soft 1111111"}}
	cases := []struct {
		name    string
		iso     sandbox.Isolation
		steps   func(t *testing.T) []step
		setup   func(h *harness)
		want    result
		events  []string
		message []string
		check   func(t *testing.T, h *harness, res Result)
	}{
		{name: "edits are reported as a diff", steps: func(t *testing.T) []step { return []step{recorded(t, "b_edit_autoapprove_true")} },
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}},
			events: []string{"git.Evidence", "settings.Begin", "host.Run", "hold.End", "git.Inspect", "git.Compare"},
			check: func(t *testing.T, h *harness, res Result) {
				if res.Diff == nil || *res.Diff != h.git.change.Diff || res.HeadBefore != "1111111" || res.HeadAfter != "1111111" {
					t.Errorf("diff %v head %s..%s", res.Diff, res.HeadBefore, res.HeadAfter)
				}
				want := []ChangedFile{{Path: "hello.txt", Status: "A"}}
				if !slices.Equal(res.ChangedFiles, want) || res.Git == nil || !slices.Equal(res.Git.ChangedFiles, want) || !res.Git.WorkingTree {
					t.Errorf("changed files %+v, git %+v", res.ChangedFiles, res.Git)
				}
				if res.Git.RefBefore != "refs/heads/main" || res.Git.Error != "" {
					t.Errorf("git report %+v", res.Git)
				}
			}},
		{name: "not a git checkout", setup: func(h *harness) { h.git.evidenceErr = fmt.Errorf("x: %w", git.ErrNotGit) },
			steps: func(t *testing.T) []step { return nil }, want: result{kind: "workspace_not_git"},
			events: []string{"git.Evidence"}, message: []string{"is not inside a git work tree"}},
		{name: "evidence before fails: nothing runs", setup: func(h *harness) { h.git.evidenceErr = errors.New("index locked") },
			steps: func(t *testing.T) []step { return nil }, want: result{kind: "edits_inspection_failed"},
			events: []string{"git.Evidence"}, message: []string{"Cline was not started: index locked"}},
		{name: "a commit is commit_created with the undo", setup: func(h *harness) { h.git.change = committed },
			steps:  func(t *testing.T) []step { return []step{pong(t)} },
			want:   result{kind: "commit_created", attempts: 1, isolation: []sandbox.Isolation{host}},
			events: []string{"git.Evidence", "settings.Begin", "host.Run", "hold.End", "git.Inspect", "git.Compare"},
			message: []string{"HEAD moved from 1111111 to 2222222", "Refs: moved refs/heads/main, new refs/tags/v1",
				"did not rewrite your history", "To undo: git reset --soft 1111111", "Cline's answer: PONG"},
			check: func(t *testing.T, h *harness, res Result) {
				if res.Git.ChangedRefs["refs/heads/main"] != "1111111..2222222" || res.Git.NewRefs["refs/tags/v1"] != "3333333" || res.Git.UndoHint == "" {
					t.Errorf("git report %+v", res.Git)
				}
			}},
		{name: "compare fails: the answer is kept", setup: func(h *harness) { h.git.compareErr = errors.New("diff exploded") },
			steps:   func(t *testing.T) []step { return []step{pong(t)} },
			want:    result{kind: "edits_inspection_failed", attempts: 1, isolation: []sandbox.Isolation{host}},
			events:  []string{"git.Evidence", "settings.Begin", "host.Run", "hold.End", "git.Inspect", "git.Compare"},
			message: []string{"could not collect the diff", "diff exploded", "Cline's answer: PONG"},
			check: func(t *testing.T, h *harness, res Result) {
				if res.Git == nil || res.Git.Error != "diff exploded" || res.Diff != nil {
					t.Errorf("git report %+v diff %v", res.Git, res.Diff)
				}
			}},
		{name: "inspect after fails: no compare", steps: func(t *testing.T) []step { return []step{pong(t)} },
			setup: func(h *harness) {
				h.git.inspect = []func(context.Context) (git.Evidence, error){
					func(context.Context) (git.Evidence, error) {
						return git.Evidence{}, errors.New("snapshot failed")
					}}
			},
			want:    result{kind: "edits_inspection_failed", attempts: 1, isolation: []sandbox.Isolation{host}},
			events:  []string{"git.Evidence", "settings.Begin", "host.Run", "hold.End", "git.Inspect"},
			message: []string{"snapshot failed"}},
		{name: "a failed run keeps its kind when compare fails too", setup: func(h *harness) { h.git.compareErr = errors.New("diff exploded") },
			steps:   func(t *testing.T) []step { return []step{recorded(t, "e_http_401")} },
			want:    result{kind: "non_zero_exit", attempts: 1, isolation: []sandbox.Isolation{host}},
			events:  []string{"git.Evidence", "settings.Begin", "host.Run", "hold.End", "git.Inspect", "git.Compare"},
			message: []string{"Incorrect API key"}},
		{name: "docker mounts the recorded checkout", iso: dock, steps: func(t *testing.T) []step { return []step{pong(t)} },
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}},
			events: []string{"git.Evidence", "settings.EnsureFresh", "settings.PrivateCopy", "docker.Run", "settings.MergeAllowed", "copy.Close", "git.Inspect", "git.Compare"},
			check: func(t *testing.T, h *harness, res Result) {
				ms := h.cli.runs()[0].Mounts
				if !slices.ContainsFunc(ms, func(m sandbox.Mount) bool { return m.Source == h.cwd && !m.ReadOnly && m.Return.Tree }) ||
					!slices.ContainsFunc(ms, func(m sandbox.Mount) bool { return m.Source == h.git.before.Repo.GitDir && m.ReadOnly }) {
					t.Errorf("mounts %+v: want the checkout read-write and its .git read-only", ms)
				}
			}},
		{name: "docker copy back refused", iso: dock, steps: func(t *testing.T) []step {
			s := pong(t)
			s.errAfter = &sandbox.CopyBackError{Source: "/repo", Err: errors.New("archive too large")}
			return []step{s}
		},
			want:    result{kind: "edits_inspection_failed", attempts: 1, isolation: []sandbox.Isolation{dock}},
			events:  []string{"git.Evidence", "settings.EnsureFresh", "settings.PrivateCopy", "docker.Run", "settings.MergeAllowed", "copy.Close", "git.Inspect", "git.Compare"},
			message: []string{"could not be brought back", "archive too large", "nothing was written to the host"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t, tc.steps(t)...)
				if tc.setup != nil {
					tc.setup(h)
				}
				c := h.call(ApplyClineEdits)
				c.Isolation = tc.iso
				res := h.do(t.Context(), c)
				wantResult(t, res, tc.want)
				wantEvents(t, h, tc.events...)
				for _, m := range tc.message {
					wantContains(t, "message", res.Message, m)
				}
				if tc.check != nil {
					tc.check(t, h, res)
				}
			})
		})
	}
}

// TestApplyRetryGuard: a retryable first attempt of apply_cline_edits is retried only when it
// provably changed nothing: no tool call, the checkout inspected and unchanged.
func TestApplyRetryGuard(t *testing.T) {
	changed := func(context.Context) (git.Evidence, error) {
		return git.Evidence{Head: "1111111", Ref: "refs/heads/main", Tree: "tree-after", Index: "index"}, nil
	}
	incomplete := func(context.Context) (git.Evidence, error) {
		return git.Evidence{Head: "1111111", Ref: "refs/heads/main", Tree: "tree-before", Index: "index", Incomplete: true}, nil
	}
	broken := func(context.Context) (git.Evidence, error) {
		return git.Evidence{}, errors.New("git crashed")
	}
	type inspectFn = func(context.Context) (git.Evidence, error)
	cases := []struct {
		name    string
		steps   func(t *testing.T) []step
		inspect []inspectFn
		want    result
		events  []string
		warning string
	}{
		{name: "unchanged checkout: retried", steps: func(t *testing.T) []step { return []step{rateLimited(t), pong(t)} },
			want:   result{ok: true, attempts: 2, isolation: []sandbox.Isolation{host, host}},
			events: []string{"git.Evidence", "settings.Begin", "host.Run", "git.Inspect", "backoff", "host.Run", "hold.End", "git.Inspect", "git.Compare"}},
		{name: "tool calls: vetoed before any inspection", steps: func(t *testing.T) []step { return []step{editsThenRateLimit(t)} },
			want:    result{kind: "transient_provider_error", attempts: 1, isolation: []sandbox.Isolation{host}, retryable: true},
			events:  []string{"git.Evidence", "settings.Begin", "host.Run", "hold.End", "git.Inspect", "git.Compare"},
			warning: "not retried: the first attempt made 2 tool call(s), so a retry could repeat edits"},
		{name: "checkout changed: vetoed", steps: func(t *testing.T) []step { return []step{rateLimited(t)} },
			inspect: []inspectFn{changed},
			want:    result{kind: "transient_provider_error", attempts: 1, isolation: []sandbox.Isolation{host}, retryable: true},
			events:  []string{"git.Evidence", "settings.Begin", "host.Run", "git.Inspect", "hold.End", "git.Inspect", "git.Compare"},
			warning: "not retried: the checkout changed during the first attempt"},
		{name: "incomplete snapshot: vetoed", steps: func(t *testing.T) []step { return []step{rateLimited(t)} },
			inspect: []inspectFn{incomplete},
			want:    result{kind: "transient_provider_error", attempts: 1, isolation: []sandbox.Isolation{host}, retryable: true},
			events:  []string{"git.Evidence", "settings.Begin", "host.Run", "git.Inspect", "hold.End", "git.Inspect", "git.Compare"},
			warning: "not retried: the checkout changed during the first attempt"},
		{name: "inspection fails: vetoed", steps: func(t *testing.T) []step { return []step{rateLimited(t)} },
			inspect: []inspectFn{broken, nil},
			want:    result{kind: "transient_provider_error", attempts: 1, isolation: []sandbox.Isolation{host}, retryable: true},
			events:  []string{"git.Evidence", "settings.Begin", "host.Run", "git.Inspect", "hold.End", "git.Inspect", "git.Compare"},
			warning: "not retried: the checkout could not be inspected after the first attempt: git crashed"},
		{name: "not retryable: the guard is not asked", steps: func(t *testing.T) []step { return []step{recorded(t, "e_http_401")} },
			want:   result{kind: "non_zero_exit", attempts: 1, isolation: []sandbox.Isolation{host}},
			events: []string{"git.Evidence", "settings.Begin", "host.Run", "hold.End", "git.Inspect", "git.Compare"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t, tc.steps(t)...)
				for _, f := range tc.inspect {
					if f == nil { // the epilogue's inspection: the checkout as before
						before := h.git.before
						f = func(context.Context) (git.Evidence, error) { return before, nil }
					}
					h.git.inspect = append(h.git.inspect, f)
				}
				res := h.do(t.Context(), h.call(ApplyClineEdits))
				wantResult(t, res, tc.want)
				wantEvents(t, h, tc.events...)
				if tc.warning != "" {
					wantWarning(t, res, tc.warning)
				} else if hasWarning(res, "not retried") {
					t.Errorf("unexpected veto: %q", res.Warnings)
				}
			})
		})
	}
}
