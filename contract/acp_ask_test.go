//go:build contract && linux

package contract

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
)

// TestACPAskUser re-observes a permission put to a person on the real CLI: the CLI waits for a
// slow answer (here 2 s) and runs the command once it is allowed; a question nobody answers is
// refused when its timeout passes, nothing runs, the model is told the call was rejected and the
// turn still ends end_turn; a git commit is refused without a question.
func TestACPAskUser(t *testing.T) {
	w := newACPWorld(t, nil)
	t.Parallel()
	p := w.initialized(acp.Options{})
	var asked atomic.Int32
	slowYes := func(ctx context.Context, c acp.ToolCall) acp.Decision {
		asked.Add(1)
		select {
		case <-time.After(2 * time.Second): // a person reading the question
			return acp.Decision{Allow: true}
		case <-ctx.Done():
			return acp.Decision{}
		}
	}
	w.prov.SetResponder(inCwd(tools(cmdCall("echo asked > asked.txt")), tools(cmdCall("git add -A && git -c user.name=m -c user.email=m@m commit -qm sneaky")), textTurn("Done.")))
	head := strings.TrimSpace(git(t, w.work, "rev-parse", "HEAD"))
	turn, err := w.prompt(w.session(p, acp.Resolve(acp.AskCommands(acp.Edits()), slowYes, 30*time.Second)), "Write asked.txt and commit")
	if err != nil || turn.StopReason != "end_turn" {
		t.Fatalf("allowed turn: got %+v, %v", turn, err)
	}
	if b, err := os.ReadFile(filepath.Join(w.work, "asked.txt")); err != nil || string(b) != "asked\n" {
		t.Errorf("asked.txt: got %q, %v; want the allowed command's output", b, err)
	}
	if got := strings.TrimSpace(git(t, w.work, "rev-parse", "HEAD")); got != head || asked.Load() != 1 {
		t.Errorf("HEAD %s (was %s), %d questions: want the commit refused without a question", got, head, asked.Load())
	}

	silent := func(ctx context.Context, _ acp.ToolCall) acp.Decision {
		asked.Add(1)
		<-ctx.Done()
		return acp.Decision{}
	}
	w.prov.SetResponder(inCwd(tools(cmdCall("echo late > late.txt")), textTurn("It was rejected.")))
	turn, err = w.prompt(w.session(p, acp.Resolve(acp.AskCommands(acp.Edits()), silent, 2*time.Second)), "Write late.txt")
	if err != nil || turn.StopReason != "end_turn" {
		t.Fatalf("unanswered turn: got %+v, %v", turn, err)
	}
	if _, err := os.Stat(filepath.Join(w.work, "late.txt")); !os.IsNotExist(err) {
		t.Errorf("late.txt exists: the unanswered command ran (%v)", err)
	}
	if len(turn.Rejected) != 1 || !strings.Contains(turn.Rejected[0].Reason, "nobody answered the permission request for run_commands within 2s; do not retry") {
		t.Errorf("rejections %+v", turn.Rejected)
	}
	chats := w.prov.Chats()
	wantToolResult(t, chats[len(chats)-1], "User rejected the tool call")
	p.stop(t)
}
