//go:build contract && linux

package contract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// acpArgs run the server on the ACP engine.
func acpArgs(extra ...string) worldOpt {
	return serverArgs(append([]string{"--cline-protocol", "acp"}, extra...)...)
}

// TestBridgeACPConversation: through the server on the real CLI 3.0.65, an ACP ask_cline answers
// with a sessionId; a follow-up with it sends the first turn's messages to the provider again (the
// CLI keeps the history) and answers; usage comes from the session's manifest; the key never
// reaches a result.
func TestBridgeACPConversation(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("FIRST"), fakeprovider.Text("SECOND")), acpArgs())
	res, first := w.call("ask_cline", map[string]any{"prompt": "Remember the word BANANA-7. Reply FIRST."})
	mcpsession.WantOK(t, res, first)
	id := mcpsession.Str(first, "sessionId")
	if mcpsession.Str(first, "text") != "FIRST" || id == "" {
		t.Fatalf("first turn: %v", first)
	}
	res, second := w.call("ask_cline", map[string]any{"prompt": "Which word? Reply SECOND.", "sessionId": id})
	mcpsession.WantOK(t, res, second)
	if mcpsession.Str(second, "text") != "SECOND" || mcpsession.Num(second, "turn") != 2 || mcpsession.Str(second, "sessionId") != id {
		t.Errorf("second turn: %v", second)
	}
	chats := w.chats(2)
	if !strings.Contains(string(chats[1].Raw), "BANANA-7") {
		t.Errorf("the follow-up's request to the provider lacks the first turn")
	}
	if got := chats[1].Header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("the provider saw Authorization %q, want the key of providers.json (sent as CLINE_API_KEY)", got)
	}
	for _, sc := range []map[string]any{first, second} {
		if b, _ := json.Marshal(sc); strings.Contains(string(b), "sk-test-123") {
			t.Errorf("the key reached a result")
		}
	}
	if u, _ := second["usage"].(map[string]any); u == nil {
		t.Errorf("no usage in an ACP result: %v", second)
	}
}

// TestDockerBridgeACPConversation: the same conversation with the CLI in the real image: the
// container's CLI keeps the session in the session's own data dir, and the follow-up in a new
// container loads it.
func TestDockerBridgeACPConversation(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("FIRST"), fakeprovider.Text("SECOND")), inDocker(), acpArgs())
	res, first := w.call("ask_cline", map[string]any{"prompt": "Remember the word CHERRY-3. Reply FIRST."})
	mcpsession.WantOK(t, res, first)
	id := mcpsession.Str(first, "sessionId")
	res, second := w.call("ask_cline", map[string]any{"prompt": "Which word? Reply SECOND.", "sessionId": id})
	mcpsession.WantOK(t, res, second)
	if mcpsession.Str(second, "text") != "SECOND" || mcpsession.Str(second, "isolation") != "docker" {
		t.Errorf("second turn: %v", second)
	}
	if chats := w.chats(2); !strings.Contains(string(chats[1].Raw), "CHERRY-3") {
		t.Errorf("the follow-up's request to the provider lacks the first turn")
	}
}

// TestBridgeACPApplyAndPolicy: over ACP on the real CLI, apply_cline_edits writes the model's edit
// and returns its diff, while the commit command of the same turn is rejected before it runs (HEAD
// unchanged, the rejection in the result); ask_cline never writes an edit (nothing written).
func TestBridgeACPApplyAndPolicy(t *testing.T) {
	commit := "git add -A && git -c user.name=m -c user.email=m@example.invalid commit -qm model-commit"
	w := newWorld(t, inCwd(tools(editCall("made.txt"), cmdCall(commit)), textTurn("Edited; the commit was refused.")), acpArgs())
	head := git(t, w.work, "rev-parse", "HEAD")
	res, sc := w.call("apply_cline_edits", map[string]any{"prompt": "Create made.txt and commit it"})
	mcpsession.WantOK(t, res, sc)
	if got := git(t, w.work, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD moved: the commit ran")
	}
	if !strings.Contains(mcpsession.Str(sc, "diff"), "made.txt") {
		t.Errorf("diff %q lacks the edit", mcpsession.Str(sc, "diff"))
	}
	rej, _ := sc["rejectedToolCalls"].([]any)
	if len(rej) != 1 || !strings.Contains(mcpsession.Str(rej[0].(map[string]any), "reason"), "git commit can move a ref or write .git") {
		t.Errorf("rejectedToolCalls %v, want the commit", sc["rejectedToolCalls"])
	}

	w.prov.SetResponder(inCwd(tools(editCall("denied.txt")), textTurn("The edit was rejected.")))
	res, sc = w.call("ask_cline", map[string]any{"prompt": "Create denied.txt"})
	mcpsession.WantOK(t, res, sc)
	if _, err := os.Stat(filepath.Join(w.work, "denied.txt")); !os.IsNotExist(err) {
		t.Errorf("an analysis edit was written: %v", err)
	}
	// The analysis tool policy's files already keep editor from the model's tools, so the CLI
	// refuses the call before it asks; the permission answer is the second line (TestACPPermissions).
	t.Logf("rejectedToolCalls %v", sc["rejectedToolCalls"])
}

// TestLatencyACPWarmVsJSON measures ask_cline through the server on the real CLI against the fake
// provider: one `cline --json` process per call against a warm ACP process, interleaved so both
// see the same load. Medians and their ratio are logged; nothing about time is asserted (run with
// CLINE_MCP_CONTRACT_BENCH=10; make bench does).
func TestLatencyACPWarmVsJSON(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envBench))
	if n <= 0 {
		t.Skipf("set %s=<calls per engine> (e.g. 10) to measure", envBench)
	}
	jsonW := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), alone())
	acpW := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), alone(), acpArgs())
	measure := func(w *world) time.Duration {
		start := time.Now()
		res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG"})
		d := time.Since(start)
		mcpsession.WantOK(t, res, sc)
		return d
	}
	cold := measure(acpW) // the first ACP call starts the process that later calls reuse
	measure(jsonW)
	var js, ac []time.Duration
	for range n {
		js = append(js, measure(jsonW))
		ac = append(ac, measure(acpW))
	}
	jp, ap := p50(js), p50(ac)
	t.Logf("ask_cline PONG, real CLI 3.0.65, fake provider, n=%d per engine:", n)
	t.Logf("  json (one-shot)  p50 %v  min %v  max %v", jp.Round(time.Millisecond), slices.Min(js).Round(time.Millisecond), slices.Max(js).Round(time.Millisecond))
	t.Logf("  acp (warm)       p50 %v  min %v  max %v  (first, cold: %v)", ap.Round(time.Millisecond), slices.Min(ac).Round(time.Millisecond), slices.Max(ac).Round(time.Millisecond), cold.Round(time.Millisecond))
	t.Logf("  json/acp p50 ratio %.1fx", float64(jp)/float64(ap))
}
