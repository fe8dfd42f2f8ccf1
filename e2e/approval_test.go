//go:build unix

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// elicitor is a client's elicitation handler that answers with the action it is set to and
// keeps every question.
type elicitor struct {
	mu       sync.Mutex
	action   mcp.ElicitationResponseAction
	messages []string
}

func (el *elicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	el.mu.Lock()
	defer el.mu.Unlock()
	el.messages = append(el.messages, req.Params.Message)
	res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: el.action}}
	if el.action == mcp.ElicitationResponseActionAccept {
		res.Content = map[string]any{"allow": true}
	}
	return res, nil
}

func (el *elicitor) set(a mcp.ElicitationResponseAction) {
	el.mu.Lock()
	el.action = a
	el.mu.Unlock()
}

func (el *elicitor) asked() []string {
	el.mu.Lock()
	defer el.mu.Unlock()
	return append([]string(nil), el.messages...)
}

// startElicitingClient starts the server for a client that declares elicitation (and speaks the
// 2025-11-25 protocol, where the server may send requests).
func (e *env) startElicitingClient(el *elicitor, args ...string) {
	argv, environ := e.server(nil, args...)
	e.sess = mcpsession.Start(e.t, bins.ClineMCP, mcpsession.Options{Args: argv, Env: environ, Dir: e.work,
		ClientOptions: []client.ClientOption{client.WithElicitationHandler(el)}, ProtocolVersion: mcp.ProtocolVersion20251125})
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Logf("server stderr:\n%s", e.sess.Stderr())
		}
	})
}

func rejectionReason(t *testing.T, sc map[string]any, tool string) string {
	t.Helper()
	rej, _ := sc["rejectedToolCalls"].([]any)
	for _, r := range rej {
		if m := r.(map[string]any); m["tool"] == tool {
			return m["reason"].(string)
		}
	}
	t.Errorf("no rejected %s call in %v", tool, sc["rejectedToolCalls"])
	return ""
}

// TestAskThroughElicitation: with --ask-commands, a command of apply_cline_edits is put to a
// client that declares elicitation: accepted, it runs (its marker file is there); declined, it
// does not, and the result says the user refused it and not to retry; a git commit is refused by
// the policy without a question. The run's instructions carry the policy block.
func TestAskThroughElicitation(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	el := &elicitor{action: mcp.ElicitationResponseActionAccept}
	e.startElicitingClient(el, acpServerArgs(e, "--ask-commands")...)

	_, ok := e.call("apply_cline_edits", map[string]any{"prompt": "fake:run_commands?cmd=touch%20accepted.txt"})
	wantOK(t, ok)
	if !exists(filepath.Join(e.work, "accepted.txt")) {
		t.Errorf("the accepted command did not run")
	}
	if q := el.asked(); len(q) != 1 || !strings.Contains(q[0], "run_commands") || !strings.Contains(q[0], "touch accepted.txt") {
		t.Errorf("questions %q, want one naming run_commands and the command", q)
	}

	el.set(mcp.ElicitationResponseActionDecline)
	_, no := e.call("apply_cline_edits", map[string]any{"prompt": "fake:run_commands?cmd=touch%20declined.txt"})
	wantOK(t, no)
	if exists(filepath.Join(e.work, "declined.txt")) {
		t.Errorf("the declined command ran")
	}
	if why := rejectionReason(t, no, "run_commands"); !strings.Contains(why, "denied by the user (decline); do not retry") {
		t.Errorf("reason %q", why)
	}

	head := gitOut(t, e.work, "rev-parse", "HEAD")
	_, commit := e.call("apply_cline_edits", map[string]any{"prompt": "fake:commit?path=c.txt"})
	if gitOut(t, e.work, "rev-parse", "HEAD") != head {
		t.Fatal("the commit ran")
	}
	if why := rejectionReason(t, commit, "run_commands"); !strings.Contains(why, "git commit can move a ref or write .git; do not retry") {
		t.Errorf("commit reason %q", why)
	}
	if n := len(el.asked()); n != 2 {
		t.Errorf("%d questions after the commit, want 2: a command the policy refuses is not put to the user", n)
	}

	_, analysis := e.call("ask_cline", map[string]any{"prompt": "fake:instructions"})
	text, _ := analysis["text"].(string)
	for _, want := range []string{"Policy for this run", "Tools: only read_files", "Commands: not allowed", "Network: use none but your model provider's API", "do not retry"} {
		if !strings.Contains(text, want) {
			t.Errorf("the analysis run's instructions lack %q:\n%s", want, text)
		}
	}
	_, instr := e.call("apply_cline_edits", map[string]any{"prompt": "fake:instructions"})
	text, _ = instr["text"].(string)
	for _, want := range []string{"Policy for this run", "Commands: each is put to the user first", "never commit", "denied by policy: do not retry it"} {
		if !strings.Contains(text, want) {
			t.Errorf("the run's instructions lack %q:\n%s", want, text)
		}
	}
}

// rawJobCall calls cline_job and returns its result, an error answer included.
func (e *env) rawJobCall(args map[string]any) *mcp.CallToolResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return e.sess.Call(ctx, "cline_job", args)
}

// pendingOf polls cline_job until the job shows a pending permission.
func (e *env) pendingOf(id string) map[string]any {
	e.t.Helper()
	var p map[string]any
	if !mcpsession.Eventually(60*time.Second, func() bool {
		sc := e.jobCall(map[string]any{"jobId": id})
		p, _ = sc["pendingPermission"].(map[string]any)
		return p != nil || sc["state"] != "running"
	}) || p == nil {
		e.t.Fatalf("job %s never showed a pending permission", id)
	}
	return p
}

// TestAskOnBackgroundJob: for a client without elicitation, a background job's command waits on
// the job: cline_job shows it (tool, command, permissionId) and "answer" with allow runs it; a
// question left unanswered is refused after --ask-timeout and reported. A synchronous call of such
// a client has no way to ask: the command is refused, saying so.
func TestAskOnBackgroundJob(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	e.start(acpServerArgs(e, jobsArgs(e, "--ask-commands", "--ask-timeout", "3s")...)...)

	_, bg := e.call("apply_cline_edits", map[string]any{"prompt": "fake:run_commands?cmd=touch%20answered.txt", "background": true})
	id, _ := bg["jobId"].(string)
	p := e.pendingOf(id)
	cmds, _ := p["commands"].([]any)
	if p["tool"] != "run_commands" || len(cmds) != 1 || cmds[0] != "touch answered.txt" {
		t.Errorf("pendingPermission %v", p)
	}
	if exists(filepath.Join(e.work, "answered.txt")) {
		t.Fatal("the command ran before the answer")
	}
	e.jobCall(map[string]any{"jobId": id, "action": "answer", "permissionId": p["permissionId"], "allow": true})
	done, _ := e.waitJob(id)
	if done["state"] != "succeeded" || !exists(filepath.Join(e.work, "answered.txt")) {
		t.Errorf("after allow: state %v, marker there: %v", done["state"], exists(filepath.Join(e.work, "answered.txt")))
	}

	_, bg2 := e.call("apply_cline_edits", map[string]any{"prompt": "fake:run_commands?cmd=touch%20unanswered.txt", "background": true})
	id2, _ := bg2["jobId"].(string)
	e.pendingOf(id2)
	done2, events := e.waitJob(id2)
	res, _ := done2["result"].(map[string]any)
	if exists(filepath.Join(e.work, "unanswered.txt")) {
		t.Error("the unanswered command ran")
	}
	if why := rejectionReason(t, res, "run_commands"); !strings.Contains(why, "nobody answered the permission request for run_commands within 3s; do not retry") {
		t.Errorf("reason %q", why)
	}
	if !strings.Contains(strings.Join(events, "\n"), `"action": "answer", "permissionId": "p1"`) {
		t.Errorf("no event says how to answer: %q", events)
	}
	if res := e.rawJobCall(map[string]any{"jobId": id2, "action": "answer", "permissionId": "p1", "allow": true}); !res.IsError {
		t.Errorf("an answer to a finished job was taken: %v", res.Content)
	}

	_, direct := e.call("apply_cline_edits", map[string]any{"prompt": "fake:run_commands?cmd=touch%20sync.txt"})
	if why := rejectionReason(t, direct, "run_commands"); !strings.Contains(why, "no way to ask the user; do not retry") || exists(filepath.Join(e.work, "sync.txt")) {
		t.Errorf("synchronous call without elicitation: reason %q", why)
	}
}

// TestSteerJob: a steer message sent while a background ACP job's turn runs is delivered at the
// turn's end as the session's next prompt (the CLI's transcript has it), its answer is in the
// job's result after the first one, and the job's events say so.
func TestSteerJob(t *testing.T) {
	e := prepareEnv(t)
	e.start(acpServerArgs(e, jobsArgs(e)...)...)
	gate := filepath.Join(e.root, "go")
	_, bg := e.call("ask_cline", map[string]any{"prompt": "fake:pong?text=FIRST&wait_file=" + gate, "background": true})
	id, _ := bg["jobId"].(string)
	if !mcpsession.Eventually(30*time.Second, func() bool { return len(e.records()) == 1 }) {
		t.Fatal("the run never started")
	}
	steer := "STEERED also say this fake:echo"
	if res := e.rawJobCall(map[string]any{"jobId": id, "action": "steer", "message": steer}); res.IsError {
		t.Fatalf("steer answer %v", res.Content)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done, events := e.waitJob(id)
	res, _ := done["result"].(map[string]any)
	text, _ := res["text"].(string)
	if done["state"] != "succeeded" || !strings.HasPrefix(text, "FIRST") || !strings.HasSuffix(text, steer) {
		t.Errorf("state %v, text %q: want FIRST, then the steered turn's answer", done["state"], text)
	}
	if !strings.Contains(strings.Join(events, "\n"), "steer message delivered as the next turn") {
		t.Errorf("events %q", events)
	}
	sid, _ := res["sessionId"].(string)
	msgs, _ := filepath.Glob(filepath.Join(e.home, ".cline", "data", "sessions", sid, "*.messages.json"))
	if len(msgs) != 1 || !strings.Contains(mcpsession.ReadFile(t, msgs[0]), "STEERED also say this") {
		t.Errorf("the CLI's transcript %v lacks the steer message", msgs)
	}
	if res := e.rawJobCall(map[string]any{"jobId": id, "action": "steer", "message": "late"}); !res.IsError {
		t.Errorf("a steer for a finished job was taken: %v", res.Content)
	}
}

// TestAskDeadlineWins: a question nobody answers never outlives the call: with an hour to answer
// and a 3 s call, the job ends at its deadline (timeout), the question is gone from cline_job
// and the command never ran.
func TestAskDeadlineWins(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	e.start(acpServerArgs(e, jobsArgs(e, "--ask-commands", "--ask-timeout", "1h")...)...)
	_, bg := e.call("apply_cline_edits", map[string]any{"prompt": "fake:run_commands?cmd=touch%20late.txt", "background": true, "timeoutSeconds": 3})
	id, _ := bg["jobId"].(string)
	e.pendingOf(id)
	done, _ := e.waitJob(id)
	res, _ := done["result"].(map[string]any)
	if res["kind"] != "timeout" || done["pendingPermission"] != nil {
		t.Errorf("state %v kind %v pending %v: want the call's timeout and no question left", done["state"], res["kind"], done["pendingPermission"])
	}
	if exists(filepath.Join(e.work, "late.txt")) {
		t.Error("the unanswered command ran")
	}
}

// TestAskThroughResult: a client of protocol 2026-07-28 takes no requests from the server; a
// synchronous call asks in its result instead (input_required with an elicitation), and the
// client's retry carries the answer: accepted, the command runs; declined, it does not.
func TestAskThroughResult(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	el := &elicitor{action: mcp.ElicitationResponseActionAccept}
	argv, environ := e.server(nil, acpServerArgs(e, "--ask-commands")...)
	e.sess = mcpsession.Start(t, bins.ClineMCP, mcpsession.Options{Args: argv, Env: environ, Dir: e.work,
		ClientOptions: []client.ClientOption{client.WithElicitationHandler(el)}})
	_, ok := e.call("apply_cline_edits", map[string]any{"prompt": "fake:run_commands?cmd=touch%20accepted.txt"})
	wantOK(t, ok)
	if !exists(filepath.Join(e.work, "accepted.txt")) || len(el.asked()) != 1 {
		t.Errorf("accepted: marker there %v, %d questions", exists(filepath.Join(e.work, "accepted.txt")), len(el.asked()))
	}
	el.set(mcp.ElicitationResponseActionDecline)
	_, no := e.call("apply_cline_edits", map[string]any{"prompt": "fake:run_commands?cmd=touch%20declined.txt"})
	if why := rejectionReason(t, no, "run_commands"); !strings.Contains(why, "denied by the user (decline); do not retry") || exists(filepath.Join(e.work, "declined.txt")) {
		t.Errorf("declined: reason %q", why)
	}
	if !strings.Contains(e.sess.Stderr(), "in its result (input_required)") {
		t.Errorf("the server did not ask through the result")
	}
}

// TestSteerUndelivered: a job that takes no further turn (the --json engine) keeps no steer
// message silently: its result's warnings count the ones not delivered. An empty or overlong
// message is refused at once.
func TestSteerUndelivered(t *testing.T) {
	e := prepareEnv(t)
	e.start(jobsArgs(e)...)
	gate := filepath.Join(e.root, "go")
	_, bg := e.call("ask_cline", map[string]any{"prompt": "fake:pong?wait_file=" + gate, "background": true})
	id, _ := bg["jobId"].(string)
	for _, bad := range []string{"", strings.Repeat("x", 4001)} {
		if res := e.rawJobCall(map[string]any{"jobId": id, "action": "steer", "message": bad}); !res.IsError {
			t.Errorf("a steer message of %d characters was taken", len(bad))
		}
	}
	if res := e.rawJobCall(map[string]any{"jobId": id, "action": "steer", "message": "never delivered"}); res.IsError {
		t.Fatalf("steer: %v", res.Content)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done, _ := e.waitJob(id)
	res, _ := done["result"].(map[string]any)
	ws, _ := res["warnings"].([]any)
	found := false
	for _, w := range ws {
		found = found || strings.Contains(w.(string), "1 steer message(s) were not delivered")
	}
	if !found {
		t.Errorf("warnings %v do not count the undelivered steer message", ws)
	}
}

// TestJSONRunInstructions: a --json run's prompt ends with the same policy block (the CLI's own
// system prompt stays): the analysis's read-only tools, no commands; apply's commands and git.
func TestJSONRunInstructions(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	e.start()
	_, ask := e.call("ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantOK(t, ask)
	_, apply := e.call("apply_cline_edits", map[string]any{"prompt": "fake:edit?path=x.txt"})
	wantOK(t, apply)
	recs := e.records()
	if len(recs) != 2 {
		t.Fatalf("%d runs, want 2", len(recs))
	}
	for i, want := range [][]string{
		{"Reply with PONG\n\nPolicy for this run", "Tools: only read_files, search_codebase", "Commands: not allowed", "do not retry"},
		{"fake:edit?path=x.txt\n\nPolicy for this run", "Commands: allowed.", "never commit", "do not retry"},
	} {
		prompt := recs[i].Argv[len(recs[i].Argv)-1]
		for _, w := range want {
			if !strings.Contains(prompt, w) {
				t.Errorf("run %d: the prompt lacks %q:\n%s", i+1, w, prompt)
			}
		}
	}
	if ask["text"] != "PONG" {
		t.Errorf("answer %q", ask["text"])
	}
}
