//go:build contract && linux

package contract

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
)

func tools(calls ...func(dir string) fakeprovider.Call) func(string) fakeprovider.Step {
	return func(dir string) fakeprovider.Step {
		var cs []fakeprovider.Call
		for _, c := range calls {
			cs = append(cs, c(dir))
		}
		return fakeprovider.Tools(cs...)
	}
}

func readCall(name string) func(string) fakeprovider.Call {
	return func(dir string) fakeprovider.Call {
		return fakeprovider.Call{Name: "read_files", Arguments: map[string]any{"files": []any{filepath.Join(dir, name)}}}
	}
}

func editCall(name string) func(string) fakeprovider.Call {
	return func(dir string) fakeprovider.Call { return editorCreate(dir, name, "written by the fake model\n") }
}

func cmdCall(cmds ...string) func(string) fakeprovider.Call {
	return func(string) fakeprovider.Call {
		return fakeprovider.Call{Name: "run_commands", Arguments: map[string]any{"commands": cmds}}
	}
}

// TestACPPermissions re-observes docs/acp.md §5 through the engine's policies: a read-only session allows
// read_files (kind read) and rejects editor (kind edit) before anything is written; an edit
// session runs a harmless command but rejects `git commit` before it runs (HEAD unchanged);
// apply_patch asks with kind "other" and the read-only policy rejects it by its name. Every turn
// still ends end_turn and every rejection is in the Turn.
func TestACPPermissions(t *testing.T) {
	w := newACPWorld(t, nil)
	t.Parallel()
	p := w.initialized(acp.Options{})

	w.prov.SetResponder(inCwd(tools(readCall("README.md"), editCall("denied.txt")), textTurn("Read it; the edit was rejected.")))
	turn, err := w.prompt(w.session(p, acp.ReadOnly(false)), "Read README.md and create denied.txt")
	if err != nil || turn.StopReason != "end_turn" {
		t.Fatalf("read-only turn: got %+v, %v", turn, err)
	}
	if _, err := os.Stat(filepath.Join(w.work, "denied.txt")); !os.IsNotExist(err) {
		t.Errorf("denied.txt exists after the edit was rejected (%v)", err)
	}
	if len(turn.Rejected) != 1 || turn.Rejected[0].Tool != "editor" || turn.Rejected[0].Kind != "edit" {
		t.Errorf("got rejections %+v, want the editor call (kind edit)", turn.Rejected)
	}
	if !hasTool(turn.Tools.Successes, "read_files") || !hasTool(turn.Tools.FailedTools, "editor") {
		t.Errorf("got successes %v failures %v, want read_files ok and editor failed", turn.Tools.Successes, turn.Tools.FailedTools)
	}
	if v := acp.Classify(turn, err, cline.Outcome{}); !v.OK || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "editor") {
		t.Errorf("got verdict %+v, want success with one warning naming the rejected editor call", v)
	}
	wantToolResult(t, w.prov.Chats()[1], "User rejected the tool call")

	head := strings.TrimSpace(git(t, w.work, "rev-parse", "HEAD"))
	w.prov.SetResponder(inCwd(tools(cmdCall("echo hi > out.txt")), tools(cmdCall("git add -A && git -c user.name=m -c user.email=m@m commit -qm sneaky")), textTurn("Done.")))
	turn, err = w.prompt(w.session(p, acp.Edits()), "Write out.txt and commit")
	if err != nil || turn.StopReason != "end_turn" {
		t.Fatalf("edit turn: got %+v, %v", turn, err)
	}
	if b, err := os.ReadFile(filepath.Join(w.work, "out.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("out.txt: got %q, %v; want the allowed command's output", b, err)
	}
	if got := strings.TrimSpace(git(t, w.work, "rev-parse", "HEAD")); got != head {
		t.Errorf("HEAD moved from %s to %s: the commit ran", head, got)
	}
	if len(turn.Rejected) != 1 || !strings.Contains(turn.Rejected[0].Reason, "git commit") || turn.Rejected[0].Kind != "execute" {
		t.Errorf("got rejections %+v, want the git commit (kind execute)", turn.Rejected)
	}

	w.prov.SetResponder(inCwd(func(dir string) fakeprovider.Step {
		return fakeprovider.Tools(fakeprovider.Call{Name: "apply_patch", Arguments: map[string]any{"input": "*** Begin Patch\n*** Add File: " + filepath.Join(dir, "patched.txt") + "\n+patched\n*** End Patch\n"}})
	}, textTurn("Patch rejected.")))
	s := w.session(p, acp.ReadOnly(true))
	if err := s.SetModel(context.Background(), "gpt-4o"); err != nil {
		t.Fatal(err)
	}
	turn, err = w.prompt(s, "Patch a file")
	if err != nil || len(turn.Rejected) != 1 || turn.Rejected[0].Tool != "apply_patch" || turn.Rejected[0].Kind != "other" {
		t.Errorf("apply_patch turn: got %+v, %v; want apply_patch (kind other) rejected", turn, err)
	}
	if _, err := os.Stat(filepath.Join(w.work, "patched.txt")); !os.IsNotExist(err) {
		t.Errorf("patched.txt exists after apply_patch was rejected (%v)", err)
	}
	logPermissionTitles(t, p.wire)
	p.stop(t)
}

// TestACPRejectAbort: five rejected calls in a row end the prompt with stopReason cancelled
// although the client never cancelled (docs/acp.md §5); Classify calls it non_zero_exit naming the tool.
func TestACPRejectAbort(t *testing.T) {
	w := newACPWorld(t, inCwd(tools(editCall("again.txt"))))
	t.Parallel()
	p := w.initialized(acp.Options{})
	turn, err := w.prompt(w.session(p, acp.ReadOnly(false)), "Create again.txt")
	if err != nil || turn.StopReason != "cancelled" || turn.Cancelled || len(turn.Rejected) != 5 {
		t.Fatalf("got %+v, %v; want stopReason cancelled after 5 rejections, not cancelled by us", turn, err)
	}
	if n := len(w.prov.Chats()); n != 5 {
		t.Errorf("the provider got %d requests, want 5", n)
	}
	v := acp.Classify(turn, err, cline.Outcome{})
	if v.OK || v.Kind != cline.KindNonZeroExit || !strings.Contains(v.Message, "editor ×5") {
		t.Errorf("got verdict %+v, want non_zero_exit naming editor ×5", v)
	}
	p.stop(t)
}

// TestACPCancel re-observes docs/acp.md §6: a cancel while the provider hangs ends the turn with
// stopReason cancelled at once and the session stays usable; a cancel while a permission request
// is pending works once the engine answers it "cancelled", and nothing is written.
func TestACPCancel(t *testing.T) {
	w := newACPWorld(t, fakeprovider.Script(fakeprovider.Hang()))
	t.Parallel()
	p := w.initialized(acp.Options{})
	s := w.session(p, acp.ReadOnly(false))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-w.prov.Arrived(1); cancel() }()
	start := time.Now()
	turn, err := s.Prompt(ctx, "Reply with PONG", nil)
	if err != nil || turn.StopReason != "cancelled" || !turn.Cancelled {
		t.Fatalf("got %+v, %v; want stopReason cancelled", turn, err)
	}
	t.Logf("cancel while the provider hangs: the turn ended %v after the prompt (includes the wait for the request)", time.Since(start).Round(time.Millisecond))
	if v := acp.Classify(turn, err, cline.Outcome{}); v.Kind != cline.KindCancelled {
		t.Errorf("got kind %q, want cancelled", v.Kind)
	}
	w.prov.SetResponder(fakeprovider.Script(fakeprovider.Text("PONG")))
	if turn, err := w.prompt(s, "Reply with PONG"); err != nil || turn.Text != "PONG" {
		t.Errorf("after a cancel: got %+v, %v", turn, err)
	}

	asked := make(chan struct{})
	var once sync.Once
	waiting := func(ctx context.Context, c acp.ToolCall) acp.Decision {
		once.Do(func() { close(asked) })
		<-ctx.Done()
		return acp.Decision{Allow: true}
	}
	w.prov.SetResponder(inCwd(tools(editCall("pending.txt")), textTurn("Done.")))
	s2 := w.session(p, waiting)
	ctx, cancel = context.WithCancel(context.Background())
	go func() { <-asked; cancel() }()
	turn, err = s2.Prompt(ctx, "Create pending.txt", nil)
	if err != nil || turn.StopReason != "cancelled" || !turn.Cancelled {
		t.Fatalf("cancel with a pending permission: got %+v, %v", turn, err)
	}
	if _, err := os.Stat(filepath.Join(w.work, "pending.txt")); !os.IsNotExist(err) {
		t.Errorf("pending.txt exists after the cancel (%v)", err)
	}
	if !strings.Contains(p.wire.String(), `"outcome":{"outcome":"cancelled"}`) {
		t.Errorf("the engine never answered the pending permission request cancelled")
	}
	p.stop(t)
}

// TestACPProviderErrors: provider failures are JSON-RPC errors of session/prompt (docs/acp.md §8) and map
// to the existing kinds; a missing key fails session/new with -32000.
func TestACPProviderErrors(t *testing.T) {
	fast := map[string]string{"retry-after": "0", "retry-after-ms": "0"}
	w := newACPWorld(t, fakeprovider.Script(fakeprovider.Error(401, nil)))
	t.Parallel()
	p := w.initialized(acp.Options{})
	s := w.session(p, acp.ReadOnly(false))
	turn, err := w.prompt(s, "Reply with PONG")
	v := acp.Classify(turn, err, cline.Outcome{})
	if v.Kind != cline.KindNonZeroExit || !strings.Contains(v.Message, "Incorrect API key") || !strings.Contains(v.Message, "authentication failed") {
		t.Errorf("401: got %+v (%v), want non_zero_exit with the auth hint", v, err)
	}
	t.Logf("401 → %v", err)
	w.prov.SetResponder(fakeprovider.Script(fakeprovider.Error(429, fast)))
	turn, err = w.prompt(s, "Reply with PONG")
	if v := acp.Classify(turn, err, cline.Outcome{}); v.Kind != cline.KindTransientProviderError || !v.Transient {
		t.Errorf("429: got %+v (%v), want transient_provider_error", v, err)
	}
	t.Logf("429 → %v", err)
	p.stop(t)

	p2 := w.agent("", acp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p2.conn.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = p2.conn.NewSession(ctx, w.work, nil)
	var re *acp.RPCError
	if !asRPC(err, &re) || re.Code != -32000 {
		t.Fatalf("session/new without a key: got %v, want JSON-RPC -32000", err)
	}
	if v := acp.Classify(acp.Turn{}, err, cline.Outcome{}); v.Kind != cline.KindNonZeroExit || v.ErrorClass != "auth" {
		t.Errorf("no key: got %+v, want non_zero_exit with errorClass auth", v)
	}
	p2.stop(t)
}

func hasTool(list []cline.ToolCount, name string) bool {
	for _, c := range list {
		if c.Name == name {
			return true
		}
	}
	return false
}

// wantToolResult checks that the model was told about a tool result containing s.
func wantToolResult(t *testing.T, r fakeprovider.Request, s string) {
	t.Helper()
	for _, m := range r.Messages() {
		if m[0] == "tool" && strings.Contains(m[1], s) {
			return
		}
	}
	if !strings.Contains(string(r.Raw), s) {
		t.Errorf("the next request does not tell the model %q", s)
	}
}

// logPermissionTitles logs the tool kinds and titles of every permission request (docs/acp.md §5 facts).
func logPermissionTitles(t *testing.T, tr *transcript) {
	for _, l := range tr.lines("<") {
		var m struct {
			Method string `json:"method"`
			Params struct {
				ToolCall struct {
					Kind     string `json:"kind"`
					Title    string `json:"title"`
					RawInput any    `json:"rawInput"`
				} `json:"toolCall"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Method == "session/request_permission" {
			in, _ := json.Marshal(m.Params.ToolCall.RawInput)
			t.Logf("permission: kind %q title %q rawInput %s", m.Params.ToolCall.Kind, capStr(m.Params.ToolCall.Title, 60), capStr(string(in), 120))
		}
	}
}

func capStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func asRPC(err error, re **acp.RPCError) bool { return errors.As(err, re) }
