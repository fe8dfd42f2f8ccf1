package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// acpServerArgs run the server on the ACP engine with sessions under the env's root.
func acpServerArgs(e *env, extra ...string) []string {
	return append([]string{"--cline-protocol", "acp", "--sessions-dir", filepath.Join(e.root, "sessions")}, extra...)
}

func wantOK(t *testing.T, sc map[string]any) {
	t.Helper()
	if sc["ok"] != true {
		t.Fatalf("call failed: %v", sc)
	}
}

// TestACPConversation: over ACP a result carries a sessionId; a call with it continues the
// conversation (Cline sees the earlier turn), in the warm process of the first call; after a
// restart a new process loads the session and continues it; cline_sessions lists it; the provider
// and key reach the CLI the only way ACP takes them (CLINE_PROVIDER, CLINE_API_KEY).
func TestACPConversation(t *testing.T) {
	e := prepareEnv(t)
	e.start(acpServerArgs(e)...)
	_, first := e.call("ask_cline", map[string]any{"prompt": "remember this fake:history"})
	wantOK(t, first)
	id, _ := first["sessionId"].(string)
	if id == "" || first["turn"] != float64(1) {
		t.Fatalf("first result: sessionId %q turn %v, want an id and turn 1", id, first["turn"])
	}
	if got := first["text"]; got != "earlier=0 first=" {
		t.Errorf("first turn: %q, want no history", got)
	}
	_, second := e.call("ask_cline", map[string]any{"prompt": "and now fake:history", "sessionId": id})
	wantOK(t, second)
	if second["sessionId"] != id || second["turn"] != float64(2) {
		t.Errorf("second result: sessionId %v turn %v, want %s and 2", second["sessionId"], second["turn"], id)
	}
	if got, _ := second["text"].(string); !strings.HasPrefix(got, "earlier=1 first=remember this") {
		t.Errorf("second turn did not see the first: %q", got)
	}
	recs := e.records()
	if len(recs) != 1 {
		t.Errorf("%d CLI processes for two calls in one directory, want 1 (the warm agent)", len(recs))
	}
	for _, r := range recs {
		if r.Env["CLINE_PROVIDER"] != "openai-compatible" || r.Env["CLINE_API_KEY"] != "sk-test-123" || r.Env["CLINE_SESSION_BACKEND_MODE"] != "local" {
			t.Errorf("ACP process env: provider %q key %q backend %q", r.Env["CLINE_PROVIDER"], r.Env["CLINE_API_KEY"], r.Env["CLINE_SESSION_BACKEND_MODE"])
		}
		if !slicesEqual(r.Argv[1:], []string{"--acp"}) {
			t.Errorf("argv %q, want only --acp", r.Argv)
		}
	}
	for _, sc := range []map[string]any{first, second} {
		if b, _ := json.Marshal(sc); strings.Contains(string(b), "sk-test-123") {
			t.Errorf("the key reached a result")
		}
	}

	// A restart: the session is still there and a new process loads it.
	if !e.sess.Stop() {
		t.Fatal("the first server did not stop")
	}
	e2 := newEnvLike(t, e, acpServerArgs(e)...)
	_, third := e2.call("ask_cline", map[string]any{"prompt": "after the restart fake:history", "sessionId": id})
	wantOK(t, third)
	if got, _ := third["text"].(string); !strings.HasPrefix(got, "earlier=2 first=remember this") || third["turn"] != float64(3) {
		t.Errorf("after the restart: %q turn %v, want the two earlier turns and turn 3", got, third["turn"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list := mcpsession.Structured(t, e2.sess.Call(ctx, "cline_sessions", map[string]any{"tool": "ask_cline"}))
	ss, _ := list["sessions"].([]any)
	if len(ss) != 1 || ss[0].(map[string]any)["sessionId"] != id || ss[0].(map[string]any)["turns"] != float64(3) {
		t.Errorf("cline_sessions: %v", list)
	}
	fi, err := os.Stat(filepath.Join(e.root, "sessions", id+".json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("session record: %v %v, want a 0600 file", fi, err)
	}
}

// TestACPSessionRules: a session keeps its tool and cwd; an unknown or malformed id is refused
// before anything runs.
func TestACPSessionRules(t *testing.T) {
	e := prepareEnv(t)
	e.start(acpServerArgs(e)...)
	_, first := e.call("ask_cline", map[string]any{"prompt": "fake:pong"})
	wantOK(t, first)
	id := first["sessionId"].(string)
	other := t.TempDir()
	gitInit(t, other, map[string]string{"a.txt": "a\n"})
	for name, c := range map[string]struct {
		tool string
		args map[string]any
		msg  string
	}{
		"other tool": {"ask_cline_workspace", map[string]any{"prompt": "x", "sessionId": id, "cwd": other}, "belongs to ask_cline"},
		"other cwd":  {"ask_cline", map[string]any{"prompt": "x", "sessionId": id, "cwd": other}, "works in"},
		"unknown":    {"ask_cline", map[string]any{"prompt": "x", "sessionId": "1796278600502_nope_cli"}, "cannot continue session"},
	} {
		_, sc := e.call(c.tool, c.args)
		if sc["ok"] != false || sc["kind"] != "launch_failed" || !strings.Contains(sc["message"].(string), c.msg) {
			t.Errorf("%s: %v, want launch_failed naming %q", name, sc, c.msg)
		}
	}
	if n := len(e.records()); n != 1 {
		t.Errorf("%d CLI processes, want only the first call's", n)
	}
}

// TestACPPermissionPolicy: over ACP an analysis rejects an edit before it runs (nothing is
// written, the rejection is in the result), and apply_cline_edits edits but rejects a git commit
// command before it runs (HEAD stays, the edit is in the diff).
func TestACPPermissionPolicy(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	e.start(acpServerArgs(e)...)
	_, ask := e.call("ask_cline", map[string]any{"prompt": "fake:edit?path=hello.txt"})
	wantOK(t, ask)
	if _, err := os.Stat(filepath.Join(e.work, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("an analysis edit was written: %v", err)
	}
	rej, _ := ask["rejectedToolCalls"].([]any)
	if len(rej) != 1 || rej[0].(map[string]any)["tool"] != "editor" {
		t.Errorf("rejectedToolCalls %v, want the editor call", ask["rejectedToolCalls"])
	}

	head := gitOut(t, e.work, "rev-parse", "HEAD")
	_, apply := e.call("apply_cline_edits", map[string]any{"prompt": "fake:commit?path=done.txt"})
	if got := gitOut(t, e.work, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved from %s to %s: the commit ran", head, got)
	}
	wantOK(t, apply)
	rej, _ = apply["rejectedToolCalls"].([]any)
	if len(rej) != 1 || rej[0].(map[string]any)["tool"] != "run_commands" || !strings.Contains(rej[0].(map[string]any)["reason"].(string), "git commit can move a ref or write .git") {
		t.Errorf("rejectedToolCalls %v, want the commit command", apply["rejectedToolCalls"])
	}
	if diff, _ := apply["diff"].(string); !strings.Contains(diff, "done.txt") {
		t.Errorf("the edit is not in the diff: %q", diff)
	}
}

// TestACPTimeoutLeavesNothing: a turn that never answers ends at the call's deadline as a
// timeout, through session/cancel, and no CLI process is left (a failed turn is never kept warm).
func TestACPTimeoutLeavesNothing(t *testing.T) {
	e := prepareEnv(t)
	e.start(acpServerArgs(e)...)
	start := time.Now()
	_, sc := e.call("ask_cline", map[string]any{"prompt": "fake:hang", "timeoutSeconds": 2})
	if sc["kind"] != "timeout" {
		t.Fatalf("result %v, want kind timeout", sc)
	}
	if time.Since(start) > 60*time.Second {
		t.Errorf("the call took %v", time.Since(start))
	}
	for _, r := range e.records() {
		if !mcpsession.Eventually(10*time.Second, func() bool { return !alive(r.PID) }) {
			t.Errorf("CLI process %d still runs after the timed-out call", r.PID)
		}
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }
