package acp_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// TestFakeConversation: two turns keep the history, usage is read from the manifest, a new
// process loads the session (replayed history) and continues it, an unknown id is typed.
func TestFakeConversation(t *testing.T) {
	w := newFakeWorld(t)
	c := w.ready()
	s := w.session(c, acp.ReadOnly(false))
	turn, err := prompt(t, s, "Remember KIWI-7 fake:pong?text=Noted.")
	if err != nil || turn.StopReason != "end_turn" || turn.Text != "Noted." {
		t.Fatalf("turn 1: got %+v, %v", turn, err)
	}
	turn, err = prompt(t, s, "Which word? fake:history")
	if v := acp.Classify(turn, err, cline.Outcome{}); !v.OK || v.Text != "earlier=1 first=Remember KIWI-7 fake:pong?text=Noted." {
		t.Fatalf("turn 2: got %+v (%v)", v, err)
	}
	u, err := acp.ReadUsage(w.dataDir(), s.ID())
	if err != nil || u.InputTokens != 2*1234 || u.OutputTokens != 2*56 {
		t.Errorf("got usage %+v, %v; want two model calls", u, err)
	}
	c.stop(t)

	c2 := w.ready()
	if _, err := c2.conn.LoadSession(t.Context(), "1700000000000_bogus", w.work, nil); !errors.As(err, new(*acp.SessionNotFoundError)) {
		t.Errorf("unknown id: got %v, want a SessionNotFoundError", err)
	}
	if _, err := c2.conn.LoadSession(t.Context(), "../escape", w.work, nil); !errors.As(err, new(*acp.SessionNotFoundError)) {
		t.Errorf("an id with a path: got %v, want a SessionNotFoundError without a request", err)
	}
	s2, err := c2.conn.LoadSession(t.Context(), s.ID(), w.work, acp.ReadOnly(false))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if h := s2.History(); len(h) != 4 || h[0] != (acp.Message{Role: "user", Text: "Remember KIWI-7 fake:pong?text=Noted."}) || h[3].Role != "agent" {
		t.Errorf("got history %+v", h)
	}
	turn, err = prompt(t, s2, "Still? fake:history")
	if err != nil || !strings.HasPrefix(turn.Text, "earlier=2 ") {
		t.Errorf("after load: got %+v, %v", turn, err)
	}
	c2.stop(t)
}

// TestSetPolicyBeforeTheFirstPrompt: a session opened with no policy (a spare's, opened before
// its call) answers its permission requests with the policy set before its first prompt: the
// read is allowed, the edit rejected; a session left without one rejects both.
func TestSetPolicyBeforeTheFirstPrompt(t *testing.T) {
	w := newFakeWorld(t)
	gitInit(t, w.work)
	c := w.ready()
	none := w.session(c, nil)
	turn, err := prompt(t, none, "fake:read_then_edit?path=denied.txt")
	if err != nil || len(turn.Rejected) != 2 {
		t.Fatalf("a session without a policy: rejections %+v, %v; want both calls", turn.Rejected, err)
	}
	later := w.session(c, nil)
	later.SetPolicy(acp.ReadOnly(false))
	turn, err = prompt(t, later, "fake:read_then_edit?path=denied.txt")
	if err != nil || len(turn.Rejected) != 1 || turn.Rejected[0].Tool != "editor" {
		t.Fatalf("with the policy set: rejections %+v, %v; want the editor call alone", turn.Rejected, err)
	}
	if len(turn.Tools.Successes) != 1 || turn.Tools.Successes[0].Name != "read_files" {
		t.Errorf("with the policy set: tools %+v, want read_files ok", turn.Tools)
	}
}

// TestFakePolicies: the read-only policy allows read_files, rejects editor and apply_patch (kind
// other) before they run; the edit policy lets edits through and rejects the git commit.
func TestFakePolicies(t *testing.T) {
	w := newFakeWorld(t)
	gitInit(t, w.work)
	c := w.ready()
	ro := w.session(c, acp.ReadOnly(false))
	turn, err := prompt(t, ro, "fake:read_then_edit?path=denied.txt")
	if err != nil || turn.StopReason != "end_turn" {
		t.Fatalf("got %+v, %v", turn, err)
	}
	if exists(filepath.Join(w.work, "denied.txt")) {
		t.Error("denied.txt was written although the policy rejected the edit")
	}
	if len(turn.Rejected) != 1 || turn.Rejected[0].Tool != "editor" || turn.Rejected[0].Kind != "edit" {
		t.Errorf("got rejections %+v", turn.Rejected)
	}
	if turn.Tools.ToolCalls != 2 || len(turn.Tools.Successes) != 1 || turn.Tools.Successes[0].Name != "read_files" {
		t.Errorf("got tools %+v, want read_files ok and editor failed", turn.Tools)
	}
	turn, _ = prompt(t, ro, "fake:apply_patch")
	if len(turn.Rejected) != 1 || turn.Rejected[0].Tool != "apply_patch" || turn.Rejected[0].Kind != "other" || exists(filepath.Join(w.work, "patched.txt")) {
		t.Errorf("apply_patch: got %+v", turn.Rejected)
	}

	head := git(t, w.work, "rev-parse", "HEAD")
	ed := w.session(c, acp.Edits())
	turn, err = prompt(t, ed, "fake:commit")
	if err != nil || turn.StopReason != "end_turn" {
		t.Fatalf("got %+v, %v", turn, err)
	}
	if mustRead(t, filepath.Join(w.work, "committed.txt")) != "committed by fake-cline\n" {
		t.Error("the allowed edit did not happen")
	}
	if got := git(t, w.work, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved (%s → %s): the commit ran", head, got)
	}
	if len(turn.Rejected) != 1 || !strings.Contains(turn.Rejected[0].Reason, "git commit") {
		t.Errorf("got rejections %+v, want the git commit", turn.Rejected)
	}
	v := acp.Classify(turn, err, cline.Outcome{})
	if !v.OK || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "rejected a tool call before it ran: run_commands: git add") {
		t.Errorf("got verdict %+v, want success with the rejection as a warning", v)
	}
	c.stop(t)
}

// TestFakeRejectAbort: five rejections in a row end the prompt cancelled; not our cancel, so
// Classify reports non_zero_exit naming the tool.
func TestFakeRejectAbort(t *testing.T) {
	w := newFakeWorld(t)
	c := w.ready()
	turn, err := prompt(t, w.session(c, acp.ReadOnly(false)), "fake:tool_denied_abort")
	if err != nil || turn.StopReason != "cancelled" || turn.Cancelled || len(turn.Rejected) != 5 {
		t.Fatalf("got %+v, %v", turn, err)
	}
	if v := acp.Classify(turn, err, cline.Outcome{}); v.Kind != cline.KindNonZeroExit || !strings.Contains(v.Message, "editor ×5") || !strings.Contains(v.Message, "User rejected the tool call") {
		t.Errorf("got %+v", v)
	}
	c.stop(t)
}

// TestFakeCancel: a cancel while the model hangs ends the turn cancelled and the session stays
// usable; a cancel while a permission is pending is answered "cancelled" and nothing is written;
// a deadline is a timeout.
func TestFakeCancel(t *testing.T) {
	w := newFakeWorld(t)
	c := w.ready()
	s := w.session(c, acp.ReadOnly(false))
	ctx, cancel := context.WithCancel(t.Context())
	var once sync.Once
	turn, err := s.Prompt(ctx, "fake:hang?after_events=true", func(e cline.Event) {
		if e.ContentType == "text" { // the agent is in the prompt now
			once.Do(cancel)
		}
	})
	if err != nil || turn.StopReason != "cancelled" || !turn.Cancelled {
		t.Fatalf("got %+v, %v", turn, err)
	}
	if v := acp.Classify(turn, err, cline.Outcome{}); v.Kind != cline.KindCancelled {
		t.Errorf("got kind %q, want cancelled", v.Kind)
	}
	if turn, err := prompt(t, s, "fake:pong"); err != nil || turn.Text != "PONG" {
		t.Errorf("after cancel: got %+v, %v", turn, err)
	}

	asked := make(chan struct{})
	waiting := func(ctx context.Context, _ acp.ToolCall) acp.Decision {
		close(asked)
		<-ctx.Done()
		return acp.Decision{Allow: true}
	}
	s2 := w.session(c, waiting)
	ctx, cancel = context.WithCancel(t.Context())
	go func() { <-asked; cancel() }()
	turn, err = s2.Prompt(ctx, "fake:edit?path=pending.txt", nil)
	if err != nil || turn.StopReason != "cancelled" || exists(filepath.Join(w.work, "pending.txt")) {
		t.Fatalf("pending permission: got %+v, %v (file exists: %v)", turn, err, exists(filepath.Join(w.work, "pending.txt")))
	}

	ctx, cancel = context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	turn, err = s.Prompt(ctx, "fake:hang", nil)
	if v := acp.Classify(turn, err, cline.Outcome{TimeoutSeconds: 1}); !turn.TimedOut || v.Kind != cline.KindTimeout {
		t.Errorf("deadline: got %+v %+v", turn, v)
	}
	c.stop(t)
}

// TestFakeUnresponsive: an agent that ignores session/cancel and stdin EOF makes the turn end
// with ErrUnresponsive after the graces; the caller then kills it.
func TestFakeUnresponsive(t *testing.T) {
	w := newFakeWorld(t)
	w.extra["FAKE_CLINE_ACP_IGNORE_EOF"] = "1"
	c := w.start(acp.Options{CancelGrace: 300 * time.Millisecond, CloseGrace: 300 * time.Millisecond})
	if _, err := c.conn.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := w.session(c, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	turn, err := s.Prompt(ctx, "fake:hang?ignore_cancel=true", nil)
	if !errors.Is(err, acp.ErrUnresponsive) || !turn.TimedOut {
		t.Fatalf("got %+v, %v; want ErrUnresponsive", turn, err)
	}
	select {
	case <-c.exited:
		t.Fatal("the agent exited although it ignores EOF: the test proves nothing")
	default:
	}
	if v := acp.Classify(turn, err, cline.Outcome{TimeoutSeconds: 1}); v.Kind != cline.KindTimeout {
		t.Errorf("got %+v, want timeout", v)
	}
	_ = c.cmd.Process.Kill()
	<-c.exited
}

// TestFakeProviderErrors: JSON-RPC errors map to the existing kinds.
func TestFakeProviderErrors(t *testing.T) {
	w := newFakeWorld(t)
	c := w.ready()
	s := w.session(c, nil)
	for _, tc := range []struct {
		scenario  string
		kind      cline.Kind
		class     string
		transient bool
		want      string
	}{
		{"http_429", cline.KindTransientProviderError, "", true, "Rate limit reached"},
		{"http_503", cline.KindTransientProviderError, "", true, "overloaded"},
		{"http_401", cline.KindNonZeroExit, "", false, "authentication failed"},
		{"auth_error", cline.KindNonZeroExit, "auth", false, "authentication failed"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			turn, err := prompt(t, s, "fake:"+tc.scenario)
			var re *acp.RPCError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want an RPCError", err)
			}
			v := acp.Classify(turn, err, cline.Outcome{})
			if v.Kind != tc.kind || v.ErrorClass != tc.class || v.Transient != tc.transient || !strings.Contains(v.Message, tc.want) {
				t.Errorf("got %+v, want kind %s class %q transient %v with %q", v, tc.kind, tc.class, tc.transient, tc.want)
			}
		})
	}
	c.stop(t)

	w.key = ""
	c2 := w.ready()
	_, err := c2.conn.NewSession(t.Context(), w.work, nil)
	var re *acp.RPCError
	if !errors.As(err, &re) || re.Code != -32000 {
		t.Errorf("no key: got %v, want -32000", err)
	}
	c2.stop(t)
}

// TestFakeEvents: a turn's progress has the --json parser's shape.
func TestFakeEvents(t *testing.T) {
	w := newFakeWorld(t)
	c := w.ready()
	s := w.session(c, acp.Edits())
	var got []string
	turn, err := s.Prompt(t.Context(), "fake:edit?path=e.txt", func(e cline.Event) {
		if p := e.Progress(); p != "" {
			got = append(got, p)
		}
	})
	if err != nil || turn.Text != "Done with e.txt." || turn.Iterations != 2 {
		t.Fatalf("got %+v, %v", turn, err)
	}
	want := []string{"iteration 1", "writing answer…", "writing answer…", "tool: editor", "iteration 2", "writing answer…", "writing answer…", "finished: completed"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got progress %q\nwant %q", got, want)
	}
	c.stop(t)
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
