//go:build e2e && linux

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaudeCodeAsk: a command put to the user (--ask-commands) reaches Claude Code as an
// elicitation — a request from the server after initialize (2.1.197, 2.1.328 opening with
// initialize), in the call's input_required result on protocol 2026-07-28 (2.1.328) — and the
// call ends (never hangs) with the command run or refused with a reason ending in "do not retry".
// Headless (-p) Claude Code answers every elicitation "cancel": the command is refused.
func TestClaudeCodeAsk(t *testing.T) {
	for _, v := range []string{claudeCodeVersion, claudeCodeLatest, claudeCodeLatest + legacyHandshake} {
		t.Run(v, func(t *testing.T) {
			c := newClaudeWorldAt(t, v, worldOpts{args: []string{"--cline-protocol", "acp", "--ask-commands", "--ask-timeout", "20s"}})
			gitInit(t, c.work, map[string]string{"README.md": "hello\n"})
			r := c.run(runOpts{calls: []toolUse{{Name: "mcp__cline__apply_cline_edits", Input: map[string]any{
				"prompt": "fake:run_commands?cmd=touch%20cc.txt", "cwd": c.work}}}})
			r.wantClean(t)
			results := r.toolResults()
			if len(results) != 1 {
				t.Fatalf("the model got %d tool results, want 1", len(results))
			}
			var sc map[string]any
			_ = json.Unmarshal([]byte(results[0].text()), &sc)
			ran := exists(filepath.Join(c.work, "cc.txt"))
			reason := ""
			if rej, _ := sc["rejectedToolCalls"].([]any); len(rej) == 1 {
				reason, _ = rej[0].(map[string]any)["reason"].(string)
			}
			elicited := strings.Contains(c.log(), "go to the client by elicitation")
			inResult := strings.Contains(c.log(), "in its result (input_required)")
			t.Logf("Claude Code %s: elicitation offered: %v (in the result: %v); command ran: %v; refusal: %q", v, elicited, inResult, ran, reason)
			if i := strings.Index(c.log(), "cannot ask the user"); i >= 0 {
				line, _, _ := strings.Cut(c.log()[i:], "\n")
				t.Logf("server: %s", line)
			}
			if !elicited || inResult != (v == claudeCodeLatest) {
				t.Errorf("the question did not reach Claude Code the way its protocol takes it (elicitation %v, in the result %v)", elicited, inResult)
			}
			if ran == (reason != "") {
				t.Errorf("the command ran: %v, refusal %q: want exactly one", ran, reason)
			}
			if !ran && !strings.HasSuffix(reason, "do not retry") {
				t.Errorf("refusal %q does not say not to retry", reason)
			}
		})
	}
}
