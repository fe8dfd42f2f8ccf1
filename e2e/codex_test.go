//go:build e2e && linux

package e2e

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCodex runs OpenAI's Codex CLI (the pinned npm release, non-interactive: `codex exec`) as a
// real MCP client: its config.toml holds a fake model provider and the entry `cline-mcp setup
// codex` wrote; in a private network namespace Codex talks to a fake Responses API on loopback,
// which makes the model call our tools; Codex starts cline-mcp, which drives the fake Cline.
// Every session must end cleanly: exit 0, an initialize handshake, no warning or error in
// Codex's log, nothing left running.
func TestCodex(t *testing.T) {
	t.Run("tools listed with their rules; the answer reaches the model intact", codexAnswer)
	t.Run("apply_cline_edits runs without a prompt and its diff comes back", codexApply)
	t.Run("without setup's approval codex exec refuses apply_cline_edits", codexUnapproved)
	t.Run("failures reach the model with the kind", codexFailures)
}

// codexTool is a call of one of our tools as Codex names it.
func codexTool(name string, args map[string]any) codexCall {
	return codexCall{Namespace: "mcp__cline", Name: name, Args: args}
}

func codexAnswer(t *testing.T) {
	c := newCodexWorld(t, worldOpts{})
	r := c.run([]codexCall{codexTool("ask_cline", map[string]any{
		"prompt": "Answer fake:pong?text=" + url.QueryEscape(intactAnswer), "cwd": c.work})})
	version := r.wantClean(t)
	t.Logf("Codex opened the session with initialize; the server answered protocol %s", version)

	reqs := r.api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2 (the call, then its output)", len(reqs))
	}
	wantCodexTools(t, reqs[0].Body)

	outs := r.outputs()
	if len(outs) != 1 || outs[0].CallID != "call_fake_1" {
		t.Fatalf("the model got tool outputs %+v, want one for call_fake_1", outs)
	}
	sc := structured(t, outs[0].text())
	if sc["ok"] != true || sc["text"] != intactAnswer {
		t.Errorf("the model read ok=%v text\n%q\nwant\n%q", sc["ok"], sc["text"], intactAnswer)
	}
	if !strings.Contains(r.stdout, "Cline's output: ") || !strings.Contains(r.stdout, `"ok":true`) {
		t.Errorf("Codex's final message is not the model's answer: %.400q", r.stdout)
	}
	if n := len(c.records()); n != 1 {
		t.Errorf("got %d Cline runs, want 1", n)
	}
}

// wantCodexTools checks what the model is offered: one namespace mcp__cline with all six tools,
// the server's instructions as its description, and the rules Codex strips from the schemas
// still in the field descriptions.
func wantCodexTools(t *testing.T, req responsesRequest) {
	t.Helper()
	all := []string{"ask_cline", "apply_cline_edits", "ask_cline_workspace", "review_cline", "cline_job", "cline_sessions"}
	i := slices.IndexFunc(req.Tools, func(tl responsesTool) bool { return tl.Type == "namespace" && tl.Name == "mcp__cline" })
	if i < 0 {
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Type+":"+tl.Name)
		}
		t.Fatalf("the model is not offered the namespace mcp__cline; tools: %v", names)
	}
	ns := req.Tools[i]
	var got []string
	for _, f := range ns.Tools {
		got = append(got, f.Name)
	}
	for _, name := range all {
		if !slices.Contains(got, name) {
			t.Errorf("the model is not offered %s (mcp__cline holds %v)", name, got)
		}
		if !strings.Contains(ns.Description, "- "+name+":") {
			t.Errorf("the namespace's description (the server's instructions) does not name %s: %.300q", name, ns.Description)
		}
	}
	ask, _ := req.tool("mcp__cline", "ask_cline")
	props, _ := ask.Parameters["properties"].(map[string]any)
	ts, _ := props["timeoutSeconds"].(map[string]any)
	desc, _ := ts["description"].(string)
	if !strings.Contains(desc, "1 to 300") {
		t.Errorf("timeoutSeconds reaches the model without its bound in the description: %v", ts)
	}
	if !strings.Contains(ask.Description, "Cline") {
		t.Errorf("ask_cline's description: %q", ask.Description)
	}
	t.Logf("mcp__cline offers %v; timeoutSeconds as the model sees it: %v", got, ts)
}

func codexApply(t *testing.T) {
	c := newCodexWorld(t, worldOpts{})
	repo := c.repo("app", map[string]string{"README.md": "# app\n"})
	r := c.run([]codexCall{codexTool("apply_cline_edits", map[string]any{
		"prompt": "Add a greeting fake:edit?path=hello.txt&content=hello%20from%20codex", "cwd": repo})})
	r.wantClean(t)
	outs := r.outputs()
	if len(outs) != 1 {
		t.Fatalf("the model got %d tool outputs, want 1", len(outs))
	}
	if strings.Contains(outs[0].text(), "requires approval") {
		t.Fatalf("Codex refused the call for want of approval: %s", outs[0].text())
	}
	sc := structured(t, outs[0].text())
	diff, _ := sc["diff"].(string)
	if sc["ok"] != true || !strings.Contains(diff, "+++ b/hello.txt") || !strings.Contains(diff, "+hello from codex") {
		t.Errorf("the model did not get the edit's diff: ok=%v diff %.600q", sc["ok"], diff)
	}
	if n := len(c.records()); n != 1 {
		t.Errorf("got %d Cline runs, want 1", n)
	}
}

// codexUnapproved is codexApply without the approval setup writes: codex exec (approval policy
// never) refuses the destructive tool before the server is called. It shows that setup's
// approval_mode is what lets the call through.
func codexUnapproved(t *testing.T) {
	c := newCodexWorld(t, worldOpts{})
	cfg := filepath.Join(c.codexHome, "config.toml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const approval = "[mcp_servers.cline.tools.apply_cline_edits]\napproval_mode = \"approve\"\n"
	if !strings.Contains(string(b), approval) {
		t.Fatalf("setup did not write %q:\n%s", approval, b)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), approval, "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := c.repo("app", map[string]string{"README.md": "# app\n"})
	r := c.run([]codexCall{codexTool("apply_cline_edits", map[string]any{
		"prompt": "Add a greeting fake:edit?path=hello.txt", "cwd": repo})})
	outs := r.outputs()
	if len(outs) != 1 || !strings.Contains(outs[0].text(), "requires approval") {
		t.Fatalf("want Codex to refuse the call for want of approval, the model got %+v", outs)
	}
	if n := len(c.records()); n != 0 {
		t.Errorf("Cline ran %d time(s) though Codex refused the call", n)
	}
	t.Logf("without the approval the model reads: %s", outs[0].text())
}

// codexFailures: a failed run and arguments past a bound Codex no longer shows in the schema
// (timeoutSeconds 301) each reach the model as our error text, which names the kind first.
func codexFailures(t *testing.T) {
	c := newCodexWorld(t, worldOpts{})
	r := c.run([]codexCall{
		codexTool("ask_cline", map[string]any{"prompt": "Go fake:http_401", "cwd": c.work}),
		codexTool("ask_cline", map[string]any{"prompt": "Go", "cwd": c.work, "timeoutSeconds": 301}),
	})
	r.wantClean(t)
	outs := r.outputs()
	if len(outs) != 2 {
		t.Fatalf("the model got %d tool outputs, want 2", len(outs))
	}
	for i, want := range []*regexp.Regexp{
		regexp.MustCompile(`"ok":false,"kind":"non_zero_exit".*authentication failed`),
		regexp.MustCompile(`"ok":false,"kind":"launch_failed".*invalid arguments: .*timeoutSeconds`),
	} {
		if !want.MatchString(outs[i].text()) {
			t.Errorf("output %d: the model read %.600q, want it to match %s", i+1, outs[i].text(), want)
		}
	}
	if n := len(c.records()); n != 1 {
		t.Errorf("got %d Cline runs, want 1 (invalid arguments start none)", n)
	}
}
