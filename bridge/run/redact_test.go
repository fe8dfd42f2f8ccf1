package run

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// withSecrets puts both secrets (one from the server's environment, one from providers.json)
// wherever a recording says what its text is.
func withSecrets(s step, text string) step {
	r := strings.NewReplacer(text, text+" "+envSecret+" "+providerSecret)
	s.stdout, s.stderr = r.Replace(s.stdout), r.Replace(s.stderr)
	return s
}

// TestRedaction: no secret value of the server's environment or of providers.json leaves in a
// result — answer, message, warnings, tails, diff — nor in progress messages.
func TestRedaction(t *testing.T) {
	const limit = "Rate limit reached for requests."
	cases := []struct {
		name  string
		tool  Tool
		iso   sandbox.Isolation
		steps func(t *testing.T) []step
		setup func(h *harness)
		want  result
	}{
		{name: "answer", tool: AskCline, steps: func(t *testing.T) []step { return []step{withSecrets(pong(t), "PONG")} },
			want: result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}}},
		{name: "failure message and tails", tool: AskCline,
			steps: func(t *testing.T) []step {
				return []step{withSecrets(rateLimited(t), limit), withSecrets(rateLimited(t), limit)}
			},
			want: result{kind: "transient_provider_error", attempts: 2, isolation: []sandbox.Isolation{host, host}, retryable: true}},
		{name: "warnings", tool: AskCline, steps: func(t *testing.T) []step { return []step{pong(t)} },
			setup: func(h *harness) { h.set.endWarn = "restored apiKey " + providerSecret + " and " + envSecret },
			want:  result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}}},
		{name: "diff", tool: ApplyClineEdits, steps: func(t *testing.T) []step { return []step{pong(t)} },
			setup: func(h *harness) { h.git.change.Diff = "+KEY=" + envSecret + "\n+OTHER=" + providerSecret + "\n" },
			want:  result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}}},
		{name: "git report error", tool: ApplyClineEdits, steps: func(t *testing.T) []step { return []step{pong(t)} },
			setup: func(h *harness) {
				h.git.compareErr = errors.New("git diff: fatal: bad object " + envSecret + " " + providerSecret)
			},
			want: result{kind: "edits_inspection_failed", attempts: 1, isolation: []sandbox.Isolation{host}}},
		{name: "commit message with the answer", tool: ApplyClineEdits,
			steps: func(t *testing.T) []step { return []step{withSecrets(pong(t), "PONG")} },
			setup: func(h *harness) { h.git.change.CommitCreated, h.git.change.HeadMoved = true, true },
			want:  result{kind: "commit_created", attempts: 1, isolation: []sandbox.Isolation{host}}},
		{name: "cleanup failure with the answer", tool: AskClineWorkspace,
			steps: func(t *testing.T) []step { return []step{withSecrets(pong(t), "PONG")} },
			setup: func(h *harness) { h.wts.releaseErr = errors.New("busy") },
			want:  result{kind: "workspace_cleanup_failed", attempts: 1, isolation: []sandbox.Isolation{host}}},
		{name: "changed file names", tool: ApplyClineEdits, steps: func(t *testing.T) []step { return []step{pong(t)} },
			setup: func(h *harness) {
				h.git.change.ChangedFiles = []git.FileChange{
					{Path: "keys/" + envSecret + ".txt", Status: "A"},
					{Path: "b/" + providerSecret, OldPath: "a/" + envSecret, Status: "R"},
				}
				h.git.change.Refs = []git.RefChange{{Name: "refs/heads/" + envSecret, New: "abc"}}
				h.git.change.CommitCreated = true
			},
			want: result{kind: "commit_created", attempts: 1, isolation: []sandbox.Isolation{host}}},
		{name: "touched file names", tool: AskClineWorkspace, iso: dock, steps: func(t *testing.T) []step { return []step{pong(t)} },
			setup: func(h *harness) {
				h.wts.touched = []git.FileChange{{Path: envSecret + "/" + providerSecret, Status: "A"}}
			},
			want: result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}}},
		{name: "docker answer", tool: AskCline, iso: dock, steps: func(t *testing.T) []step { return []step{withSecrets(pong(t), "PONG")} },
			want: result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t, tc.steps(t)...)
				if tc.setup != nil {
					tc.setup(h)
				}
				c := h.call(tc.tool)
				c.Isolation = tc.iso
				res := h.do(t.Context(), c)
				wantResult(t, res, tc.want)
				if found := leaks(t, res, envSecret, providerSecret); len(found) > 0 {
					t.Errorf("result leaks %q: %+v", found, res)
				}
				if b, _ := json.Marshal(res); !strings.Contains(string(b), "[REDACTED]") {
					t.Errorf("nothing was marked redacted: %+v", res)
				}
				for _, p := range h.progressed() {
					if strings.Contains(p, envSecret) || strings.Contains(p, providerSecret) {
						t.Errorf("progress leaks a secret: %q", p)
					}
				}
			})
		})
	}
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
