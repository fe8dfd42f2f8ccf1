package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

func TestToolsAdvertised(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := e.sess.Client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ readOnly, destructive bool }{
		"ask_cline":           {true, false},
		"apply_cline_edits":   {false, true},
		"ask_cline_workspace": {true, false},
		"review_cline":        {true, false},
		"cline_sessions":      {true, false},
		"cline_job":           {false, false},
	}
	if len(list.Tools) != len(want) {
		t.Fatalf("got %d tools, want %d", len(list.Tools), len(want))
	}
	for _, tool := range list.Tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		a := tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: all four annotation hints must be set explicitly, got %+v", tool.Name, a)
			continue
		}
		if *a.ReadOnlyHint != w.readOnly || *a.DestructiveHint != w.destructive {
			t.Errorf("%s: got readOnly=%v destructive=%v, want %v/%v", tool.Name, *a.ReadOnlyHint, *a.DestructiveHint, w.readOnly, w.destructive)
		}
		if tool.Name == "cline_sessions" || tool.Name == "cline_job" {
			continue // not a run tool: no prompt, cwd or run options
		}
		b, _ := json.Marshal(tool)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		in, _ := m["inputSchema"].(map[string]any)
		props, _ := in["properties"].(map[string]any)
		for _, p := range []string{"prompt", "cwd", "thinking", "timeoutSeconds", "provider", "model", "isolation"} {
			if _, ok := props[p]; !ok {
				t.Errorf("%s: input schema lacks %q", tool.Name, p)
			}
		}
		if _, ok := m["outputSchema"].(map[string]any); !ok {
			t.Errorf("%s: no outputSchema", tool.Name)
		}
	}
}

func TestInvalidArgumentsNeverSpawn(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.root, "file.txt")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		tool  string
		args  map[string]any
		field string
	}{
		{"missing prompt", "ask_cline", map[string]any{}, "prompt"},
		{"empty prompt", "ask_cline", map[string]any{"prompt": "   "}, "prompt"},
		{"prompt not a string", "ask_cline", map[string]any{"prompt": 42}, "prompt"},
		{"bad thinking", "ask_cline", map[string]any{"prompt": "hi there", "thinking": "extreme"}, "thinking"},
		{"timeout zero", "ask_cline", map[string]any{"prompt": "hi there", "timeoutSeconds": 0}, "timeoutSeconds"},
		{"timeout fraction", "ask_cline", map[string]any{"prompt": "hi there", "timeoutSeconds": 1.5}, "timeoutSeconds"},
		{"timeout over max", "ask_cline", map[string]any{"prompt": "hi there", "timeoutSeconds": 301}, "timeoutSeconds"},
		{"timeout string", "ask_cline", map[string]any{"prompt": "hi there", "timeoutSeconds": "30"}, "timeoutSeconds"},
		{"provider charset", "ask_cline", map[string]any{"prompt": "hi there", "provider": "open ai"}, "provider"},
		{"provider too long", "ask_cline", map[string]any{"prompt": "hi there", "provider": strings.Repeat("a", 121)}, "provider"},
		{"model injection", "ask_cline", map[string]any{"prompt": "hi there", "model": "m;rm -rf /"}, "model"},
		{"session id path", "ask_cline", map[string]any{"prompt": "hi there", "sessionId": "../../etc/x"}, "sessionId"},
		{"session with json", "ask_cline", map[string]any{"prompt": "hi there", "sessionId": "s1", "protocol": "json"}, "protocol"},
		{"bad protocol", "ask_cline", map[string]any{"prompt": "hi there", "protocol": "grpc"}, "protocol"},
		{"background not bool", "ask_cline", map[string]any{"prompt": "hi there", "background": "yes"}, "background"},
		{"reserved top", "ask_cline", map[string]any{"prompt": "hi there", "__proto__": map[string]any{}}, "__proto__"},
		{"reserved nested", "ask_cline", map[string]any{"prompt": "hi there", "model": "x", "constructor": "y"}, "constructor"},
		{"cwd missing dir", "ask_cline", map[string]any{"prompt": "hi there", "cwd": filepath.Join(e.root, "nope")}, "cwd"},
		{"cwd is a file", "ask_cline", map[string]any{"prompt": "hi there", "cwd": file}, "cwd"},
		{"apply without cwd", "apply_cline_edits", map[string]any{"prompt": "hi there"}, "cwd"},
		{"workspace without cwd", "ask_cline_workspace", map[string]any{"prompt": "hi there"}, "cwd"},
		{"systemPrompt only for ask_cline", "apply_cline_edits", map[string]any{"prompt": "hi there", "cwd": "/", "systemPrompt": "x"}, "systemPrompt"},
		{"unknown argument", "ask_cline", map[string]any{"prompt": "hi there", "timeout": 5}, "timeout"},
		{"bad isolation", "ask_cline", map[string]any{"prompt": "hi there", "isolation": "vm"}, "isolation"},
		{"NUL in prompt", "ask_cline", map[string]any{"prompt": "hi\x00there"}, "prompt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := e.sess.CallErr(ctx, c.tool, c.args, nil)
			if err != nil {
				t.Fatalf("protocol error %v, want a tool result with isError", err)
			}
			sc := mcpsession.Structured(t, res)
			mcpsession.WantKind(t, res, sc, "launch_failed")
			if msg := mcpsession.Str(sc, "message"); !strings.Contains(msg, c.field) {
				t.Errorf("message %q does not name the field %q", msg, c.field)
			}
			if !strings.Contains(mcpsession.Text(res), "Kind: launch_failed") && c.tool != "apply_cline_edits" {
				t.Errorf("text is not the seed's error layout: %q", mcpsession.Text(res))
			}
		})
	}
	if n := len(e.records()); n != 0 {
		t.Fatalf("the CLI was spawned %d time(s) for invalid input", n)
	}
}

func TestAskClinePong(t *testing.T) {
	e := newEnv(t)
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG", "thinking": "high", "systemPrompt": "Be terse."})
	mcpsession.WantOK(t, res, sc)
	if got := mcpsession.Str(sc, "text"); got != "PONG" {
		t.Errorf("got text %q, want PONG", got)
	}
	if mcpsession.Num(sc, "attempts") != 1 || sc["exitCode"] != float64(0) {
		t.Errorf("got attempts %v exitCode %v, want 1 and 0", sc["attempts"], sc["exitCode"])
	}
	if mcpsession.Str(sc, "model") == "" || mcpsession.Str(sc, "isolation") != "host" {
		t.Errorf("got model %q isolation %q", mcpsession.Str(sc, "model"), mcpsession.Str(sc, "isolation"))
	}
	if mcpsession.Text(res) != "PONG" {
		t.Errorf("got text content %q, want PONG", mcpsession.Text(res))
	}
	recs := e.records()
	if len(recs) != 1 {
		t.Fatalf("got %d invocations, want 1", len(recs))
	}
	r := recs[0]
	argv := r.Argv[1:]
	// The prompt is the last element, followed by the run's policy block.
	if !strings.HasPrefix(argv[len(argv)-1], "Reply with the word PONG\n\nPolicy for this run") {
		t.Errorf("prompt is not the last argv element: %q", argv)
	}
	for _, pair := range [][2]string{{"-c", e.work}, {"--auto-approve", "true"}, {"--thinking", "high"}, {"-s", "Be terse."}} {
		if !hasPair(argv, pair[0], pair[1]) {
			t.Errorf("argv %q lacks %s %s", argv, pair[0], pair[1])
		}
	}
	if !slices.Contains(argv, "--json") {
		t.Errorf("argv %q lacks --json", argv)
	}
	if r.Env["CLINE_NO_AUTO_UPDATE"] != "1" || r.Env["CLINE_SESSION_BACKEND_MODE"] != "local" {
		t.Errorf("env lacks CLINE_NO_AUTO_UPDATE=1 / CLINE_SESSION_BACKEND_MODE=local: %v", r.Env)
	}
	if !slices.Contains(r.EnvKeys, "FAKE_CLINE_STATE_DIR") {
		t.Errorf("the server's environment was not passed on: %v", r.EnvKeys)
	}
	if r.Stdin != "devnull" {
		t.Errorf("got stdin %q, want devnull", r.Stdin)
	}
	if r.PGID != r.PID {
		t.Errorf("the CLI is not the leader of its own process group (pid %d pgid %d)", r.PID, r.PGID)
	}
	// The analysis policy: Cline may read but every mutating tool is disabled.
	if r.GlobalSettingsPath == "" || r.Env["CLINE_GLOBAL_SETTINGS_PATH"] == "" {
		t.Fatalf("no generated global settings for the read-only policy: %+v", r)
	}
	if _, err := os.Stat(r.Env["CLINE_GLOBAL_SETTINGS_PATH"]); !os.IsNotExist(err) {
		t.Errorf("the generated global settings file outlived the call (stat err %v)", err)
	}
}

func hasPair(argv []string, flag, val string) bool {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == flag && argv[i+1] == val {
			return true
		}
	}
	return false
}

func TestPromptsTheRealCLIWouldReject(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"PONG", "-v", "--help me", "-PONG hi"} {
		_, sc := e.call("ask_cline", map[string]any{"prompt": p})
		if sc["ok"] != true {
			t.Errorf("prompt %q: got %s: %s", p, mcpsession.Str(sc, "kind"), mcpsession.Str(sc, "message"))
		}
	}
}

func TestAnalysisCannotEdit(t *testing.T) {
	e := newEnv(t)
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Read README and change things fake:try_mutate"})
	mcpsession.WantOK(t, res, sc)
	for _, f := range []string{"mutated.txt", "touched.txt"} {
		if _, err := os.Stat(filepath.Join(e.work, f)); !os.IsNotExist(err) {
			t.Errorf("ask_cline changed the work tree: %s exists", f)
		}
	}
}

func TestSeedPolicyDeniesEveryTool(t *testing.T) {
	e := newEnv(t, "--analysis-policy", "seed")
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Create x.txt please fake:tool_denied_abort"})
	mcpsession.WantKind(t, res, sc, "non_zero_exit")
	if !strings.Contains(mcpsession.Str(sc, "message"), "editor") {
		t.Errorf("message %q does not name the denied tool", mcpsession.Str(sc, "message"))
	}
	if r := e.records(); len(r) != 1 || !hasPair(r[0].Argv, "--auto-approve", "false") {
		t.Errorf("seed policy must pass --auto-approve false once, got %+v", r)
	}
	if mcpsession.Num(sc, "attempts") != 1 {
		t.Errorf("got attempts %v, want 1 (not transient)", sc["attempts"])
	}
}

// TestServerSIGTERMStopsRunsAndExits: a server told to stop (SIGTERM) cancels its calls, kills
// their processes, removes their worktrees and exits, without answering them: the signal comes,
// in practice, from the client that is going away (Claude Code sends SIGINT, then SIGTERM).
func TestServerSIGTERMStopsRunsAndExits(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "x\n"})
	pid := e.hangingWorkspaceRun().PID
	if err := e.sess.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.sess.Exited():
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not exit within 20 s of SIGTERM")
	}
	if !e.sess.Cmd.ProcessState.Success() {
		t.Errorf("server exit: %v, want 0", e.sess.Cmd.ProcessState)
	}
	if pid > 1 && alive(pid) {
		t.Errorf("the CLI (pid %d) outlived the server", pid)
	}
	if wts := worktreeList(t, e.work); len(wts) != 1 {
		t.Errorf("worktrees left after the server stopped: %v", wts)
	}
	if w := strings.Join(linesOf(e.sess), ""); strings.Contains(w, `"kind":"cancelled"`) {
		t.Errorf("the call the server stopped was answered; wire:\n%s", w)
	}
	for _, want := range []string{"kind=cancelled", "response withheld: the server is stopping on a signal"} {
		if !strings.Contains(e.sess.Stderr(), want) {
			t.Errorf("the server log lacks %q", want)
		}
	}
}
