//go:build contract && linux

package contract

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestCancelKillsRealCLI: notifications/cancelled while the real CLI waits for the model ends the
// CLI and everything it started (found by the marker in their environment), quickly, and the
// server keeps serving.
func TestCancelKillsRealCLI(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Hang()))
	server := w.sess.Cmd.Process.Pid
	cancel, done := w.callUntilModel(1)
	defer cancel()
	running := tagged(w.tag, server)
	if len(running) == 0 {
		t.Fatal("no process carries the run tag while the CLI waits for the model: the marker did not reach the CLI")
	}
	t.Logf("processes of the run before cancel: %v", describe(running))
	start := time.Now()
	cancel()
	<-done
	if left := eventuallyNone(10*time.Second, func() []int { return tagged(w.tag, server) }); len(left) > 0 {
		t.Fatalf("%v after cancel these processes of the run are alive: %v", time.Since(start), describe(left))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the CLI and its children took %v to disappear after the cancel, want ~the 500 ms stop grace", d)
	}
	// No response for the cancelled request (MCP: the receiver SHOULD NOT respond); the server's
	// log records the outcome.
	if !mcpsession.Eventually(10*time.Second, func() bool {
		return strings.Contains(w.sess.Stderr(), "kind=cancelled") && strings.Contains(w.sess.Stderr(), "response withheld")
	}) {
		t.Errorf("the server log does not record the cancelled call and its withheld response")
	}
	if all, _ := w.sess.Lines(); strings.Contains(strings.Join(all, ""), `"kind":"cancelled"`) {
		t.Errorf("the cancelled request was answered")
	}

	// The server is still serving.
	w.prov.SetResponder(fakeprovider.Script(fakeprovider.Text("PONG")))
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG"})
	mcpsession.WantOK(t, res, sc)
}

// callUntilModel starts an ask_cline call and returns once the provider got its n-th chat
// request (the CLI waits for the model), with the call's cancel and a channel that receives the
// call's error when it ends.
func (w *world) callUntilModel(n int) (context.CancelFunc, <-chan error) {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := w.sess.CallErr(ctx, "ask_cline", map[string]any{"prompt": "Reply with the word PONG", "cwd": w.work}, "tok-cancel")
		done <- err
	}()
	select {
	case <-w.prov.Arrived(n):
	case <-time.After(2 * time.Minute):
		cancel()
		for _, r := range w.prov.Requests() {
			w.t.Logf("provider: %s %s #%d at %s", r.Method, r.Path, r.Index, r.Time.Format("15:04:05.000"))
		}
		w.t.Fatal("the CLI never called the provider")
	}
	return cancel, done
}
