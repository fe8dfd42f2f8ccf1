//go:build e2e

package e2e

import (
	"maps"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// expect is what one isolation column of a scenario must produce.
type expect struct {
	kind     string   // "" means ok
	attempts int      // 0: not checked
	contains string   // substring of the text (ok) or of the message (failure)
	warning  string   // substring of some warning
	iso      []string // attemptIsolation; nil: every attempt in the column's isolation
}

// scenario is one row of the host×docker matrix. A row either makes one call and checks it
// against want[iso], or runs custom (which gets a fresh world of the column's isolation).
type scenario struct {
	name   string
	opts   worldOpts
	tool   string // default ask_cline
	prompt string
	args   map[string]any
	cwd    func(w *world) string // default: the world's plain (non-git) work dir
	want   map[string]expect
	check  func(t *testing.T, w *world, sc map[string]any)
	custom func(t *testing.T, w *world)
	skip   map[string]string // isolation → why that cell cannot run
}

func both(e expect) map[string]expect { return map[string]expect{host: e, docker: e} }

// stateInWorktree keeps the fake's retry counter inside the workspace worktree, which both
// attempts of one ask_cline_workspace call share, on the host and (mounted read-write) in a
// container. The default state dir is not visible in a container, and the container's own
// default (<private settings copy>/fake-cline-state) is fresh for every attempt.
var stateInWorktree = worldOpts{env: []string{"FAKE_CLINE_STATE_DIR=.fake-cline-state"}, args: []string{"--docker-env", "FAKE_CLINE_STATE_DIR"}}

func committedRepo(w *world) string {
	return w.repo("r", map[string]string{"README.md": "hello\n", "src/a.go": "package a\n"})
}

var scenarios = []scenario{
	// Every kind a run can produce, with the seed's retry policy.
	{name: "completed", prompt: "Reply with PONG please", want: both(expect{attempts: 1, contains: "PONG"})},
	{name: "non_zero_exit 401 not retried", prompt: "go fake:http_401", want: both(expect{kind: "non_zero_exit", attempts: 1, contains: "API key"})},
	{name: "transient_provider_error 503 retried once", prompt: "go fake:http_503", want: both(expect{kind: "transient_provider_error", attempts: 2})},
	{name: "timeout not retried: timeoutSeconds is the call's", prompt: "go fake:hang", args: map[string]any{"timeoutSeconds": 2}, want: both(expect{kind: "timeout", attempts: 1, contains: "2 s"})},
	{name: "cline_updating module_not_found retried once", prompt: "go fake:module_not_found", want: both(expect{kind: "cline_updating", attempts: 2, contains: "missing or being updated"})},
	{name: "launch_failed invalid input", prompt: "hi there", args: map[string]any{"timeoutSeconds": 301}, want: both(expect{kind: "launch_failed", contains: "timeoutSeconds"})},
	{name: "launch_failed CLI or image missing", custom: launchMissing},
	{name: "launch_failed wrong --docker-cline, not retried", custom: launchWrongDockerCLI,
		skip: map[string]string{host: "a CLI missing on the host is the row above (and cline_updating when it vanishes mid-update)"}},
	{name: "analysis run_commands: allowed in Docker, failed write warns nothing", prompt: "go fake:run_commands?cmd=echo%20hi&cmd=touch%20pwned",
		want: both(expect{attempts: 1}), check: analysisCommands},
	{name: "malformed_json", prompt: "go fake:garbage", want: both(expect{kind: "malformed_json", attempts: 1})},
	{name: "missing_final_result", prompt: "go fake:no_result", want: both(expect{kind: "missing_final_result", attempts: 1})},
	{name: "workspace_not_git", tool: "ask_cline_workspace", prompt: "Read please", want: both(expect{kind: "workspace_not_git"})},
	{name: "workspace_setup_failed unborn HEAD", tool: "ask_cline_workspace", prompt: "Read please",
		cwd: func(w *world) string { return w.repo("empty", nil) }, want: both(expect{kind: "workspace_setup_failed"})},
	{name: "workspace_cleanup_failed undeletable worktree", custom: cleanupFailed},
	{name: "commit_created guard", tool: "apply_cline_edits", prompt: "Commit please fake:commit?path=c.txt&message=sneaky", cwd: committedRepo,
		want: map[string]expect{
			host: {kind: "commit_created", attempts: 1, contains: "git reset --soft"},
			// .git is mounted read-only: the commit fails inside, the edit is reported, HEAD stays.
			docker: {attempts: 1},
		}, check: commitGuard},
	{name: "edits_inspection_failed", custom: inspectionFailed},
	{name: "cancelled during run", custom: cancelDuringRun},
	{name: "cancelled during backoff", opts: worldOpts{env: []string{"CLINE_MCP_TEST_RETRY_BACKOFF=20s"}}, custom: cancelDuringBackoff},
	{name: "cancelled while queued for a slot (--max-concurrent 1)", opts: worldOpts{floor: host, args: []string{"--max-concurrent", "1"}}, custom: cancelQueued},

	// Outcomes that are not plain kinds.
	{name: "success despite exit 1 after a completed result", prompt: "go fake:completed_then_exit1", want: both(expect{attempts: 1, contains: "PONG", warning: "exited with code 1 after a completed result"})},
	{name: "success despite SIGTERM after a completed result", prompt: "go fake:completed_then_sigterm", want: both(expect{attempts: 1, contains: "PONG", warning: "SIGTERM"})},
	{name: "exit 0 with finishReason error (auth) not retried", prompt: "go fake:finish_error_exit0?transient=false", want: both(expect{kind: "non_zero_exit", attempts: 1})},
	{name: "exit 0 with finishReason error (503) retried", prompt: "go fake:finish_error_exit0?transient=true", want: both(expect{kind: "transient_provider_error", attempts: 2})},
	{name: "transient then ok (ask_cline)", prompt: "go fake:http_429_then_ok?key=ask", want: map[string]expect{
		host: {attempts: 2, contains: "PONG"},
		// Documented limit of the fake in a container: its counter lives in the private settings
		// copy, which every attempt gets fresh, and the cwd is mounted read-only — so the
		// retry fails again. See the workspace row for a retry that succeeds in Docker.
		docker: {kind: "transient_provider_error", attempts: 2},
	}},
	{name: "transient then ok (workspace, counter in the worktree)", tool: "ask_cline_workspace", prompt: "go fake:http_429_then_ok?key=ws", cwd: committedRepo, opts: stateInWorktree,
		want: both(expect{attempts: 2, contains: "PONG"})},
	{name: "retry in Docker after a host attempt (--retry-isolation docker)", tool: "ask_cline_workspace", prompt: "go fake:http_429_then_ok?key=ri", cwd: committedRepo,
		opts: worldOpts{env: stateInWorktree.env, args: append([]string{"--retry-isolation", "docker"}, stateInWorktree.args...), needDocker: true},
		want: map[string]expect{host: {attempts: 2, contains: "PONG", iso: []string{host, docker}}},
		skip: map[string]string{docker: "with a docker floor every attempt runs in Docker already (covered by the row above)"}},
	{name: "timeout without retry (timeoutSeconds>120)", skip: map[string]string{
		host:   "needs >120 s per attempt; the 121 s boundary is ShouldRetry's unit test (bridge/cline TestShouldRetry) and 'cancelled during run' runs with timeoutSeconds 121 (accepted, 1 attempt)",
		docker: "same as host",
	}},
	{name: "grace 500ms with a grandchild holding stdio", custom: graceGrandchild},
	{name: "override leaves the user's defaults and keeps a host run's refreshed token", custom: overrideRestore},
	{name: "apply diff of exactly the run's changes", custom: applyDiff},
	{name: "workspace worktree removed after success and timeout", custom: workspaceCleanup},
	{name: "workspace pool reuses a worktree as HEAD, nothing left at exit", opts: worldOpts{args: []string{"--workspace-pool", "1"}}, custom: workspacePool},
	{name: "huge output 200 MiB, bounded server memory", custom: hugeOutput},
	{name: "secrets redacted in every field and in progress", custom: secretsRedacted},
	{name: "progress heartbeat on a silent run", opts: worldOpts{env: []string{"CLINE_MCP_TEST_PROGRESS_HEARTBEAT=1s"}}, custom: heartbeat},
}

// TestMatrix runs every scenario in host and Docker isolation, one server per cell; each
// cell's cleanup proves the server's stdout was pure JSON-RPC and that nothing leaked.
func TestMatrix(t *testing.T) {
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			for _, iso := range isolations {
				t.Run(iso, func(t *testing.T) {
					if why := s.skip[iso]; why != "" {
						t.Skip(why)
					}
					if s.custom == nil {
						if _, ok := s.want[iso]; !ok {
							t.Skip("no expectation for this isolation")
						}
					}
					o := s.opts
					if o.needDocker && dockerErr != nil {
						t.Skipf("!!! SKIPPED: needs Docker: %v", dockerErr)
					}
					w := newWorld(t, iso, o)
					if s.custom != nil {
						s.custom(t, w)
						return
					}
					runRow(t, w, s)
				})
			}
		})
	}
}

func runRow(t *testing.T, w *world, s scenario) {
	want := s.want[w.iso]
	tool := s.tool
	if tool == "" {
		tool = "ask_cline"
	}
	args := maps.Clone(s.args)
	if args == nil {
		args = map[string]any{}
	}
	args["prompt"] = s.prompt
	if s.cwd != nil {
		args["cwd"] = s.cwd(w)
	}
	res, sc := w.call(tool, args)
	wantResult(t, res, sc, want.kind, want.attempts)
	field := "text"
	if want.kind != "" {
		field = "message"
	}
	if !strings.Contains(mcpsession.Str(sc, field), want.contains) {
		t.Errorf("got %s %q, want it to contain %q", field, mcpsession.Str(sc, field), want.contains)
	}
	if want.warning != "" && !warningsContain(sc, want.warning) {
		t.Errorf("warnings %v lack %q", sc["warnings"], want.warning)
	}
	if want.kind != "" && want.kind != "launch_failed" && want.kind != "workspace_not_git" && want.kind != "workspace_setup_failed" {
		iso := want.iso
		if iso == nil {
			for i := 0; i < want.attempts; i++ {
				iso = append(iso, w.iso)
			}
		}
		wantIsolation(t, sc, iso...)
		text := mcpsession.Text(res)
		if tool != "apply_cline_edits" && !strings.Contains(text, "Kind: "+want.kind) {
			t.Errorf("the error text is not the seed's layout: %.300q", text)
		}
	}
	if want.kind == "" {
		iso := want.iso
		if iso == nil {
			for i := 0; i < want.attempts; i++ {
				iso = append(iso, w.iso)
			}
		}
		wantIsolation(t, sc, iso...)
	}
	if s.check != nil {
		s.check(t, w, sc)
	}
}
