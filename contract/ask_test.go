//go:build contract && linux

package contract

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestAskClineText: a plain answer travels provider → CLI → server → MCP client, and the request
// the CLI made is the one the recordings show (docs/cline-cli.md "Environment and network").
func TestAskClineText(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")))
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG"})
	mcpsession.WantOK(t, res, sc)
	if got := mcpsession.Str(sc, "text"); got != "PONG" {
		t.Errorf("got text %q, want PONG", got)
	}
	if got := mcpsession.Text(res); got != "PONG" {
		t.Errorf("got text content %q, want PONG", got)
	}
	wantAttempts(t, sc, 1)
	if sc["exitCode"] != float64(0) {
		t.Errorf("got exitCode %v, want 0", sc["exitCode"])
	}
	if got := mcpsession.Str(sc, "model"); got != "fake-model" {
		t.Errorf("got model %q, want fake-model", got)
	}
	if u, _ := sc["usage"].(map[string]any); mcpsession.Num(u, "inputTokens") != 1234 || mcpsession.Num(u, "outputTokens") != 56 {
		t.Errorf("got usage %v, want the provider's 1234/56", sc["usage"])
	}

	r := w.chats(1)[0]
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("got Authorization %q, want the saved key", got)
	}
	if r.Path != "/v1/chat/completions" || r.Body["model"] != "fake-model" || r.Body["stream"] != true {
		t.Errorf("got %s model %v stream %v, want /v1/chat/completions fake-model true", r.Path, r.Body["model"], r.Body["stream"])
	}
	if _, ok := r.Body["reasoning_effort"]; ok {
		t.Errorf("reasoning_effort %v sent for the default thinking level none", r.Body["reasoning_effort"])
	}
	msgs := r.Messages()
	if len(msgs) != 2 || msgs[1][0] != "user" || !strings.Contains(msgs[1][1], "Reply with the word PONG") {
		t.Errorf("got messages %q, want system + the user's prompt", msgs)
	}
	if wd := r.WorkingDirectory(); wd != w.work {
		t.Errorf("Cline worked in %q, want the call's cwd %q", wd, w.work)
	}
	// Run without overrides: the CLI rewrites providers.json, but the tracked fields stay.
	after := w.readJSON(w.providers)
	if after["lastUsedProvider"] != "openai-compatible" || settingsOf(after, "openai-compatible")["model"] != "fake-model" {
		t.Errorf("providers.json changed its default: %v", after)
	}
}

// TestPromptShapes: prompts the CLI would take for a command or an option reach the model as
// the prompt (docs/cline-cli.md "The prompt": "PONG" alone is rejected by the CLI; the server shapes it),
// followed only by the run's policy block.
func TestPromptShapes(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")))
	for i, p := range []string{"PONG", "-PONG"} {
		res, sc := w.call("ask_cline", map[string]any{"prompt": p})
		mcpsession.WantOK(t, res, sc)
		c := w.chats(i + 1)
		msgs := c[i].Messages()
		got := strings.TrimSpace(msgs[len(msgs)-1][1])
		if head, _, ok := strings.Cut(got, "\n\nPolicy for this run"); !ok || head != p {
			t.Errorf("prompt %q: the model saw %q, want the prompt then the policy block", p, got)
		}
	}
}

// TestThinkingAndSystemPrompt: thinking becomes reasoning_effort, systemPrompt replaces Cline's
// system message, and reasoning deltas do not leak into the answer.
func TestThinkingAndSystemPrompt(t *testing.T) {
	step := fakeprovider.Step{Kind: fakeprovider.KindText, Reasoning: "The user wants PONG.", Text: "PONG"}
	w := newWorld(t, fakeprovider.Script(step))
	const sys = "You are a terse oracle. Answer in one word."
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG", "thinking": "high", "systemPrompt": sys})
	mcpsession.WantOK(t, res, sc)
	if got := mcpsession.Str(sc, "text"); got != "PONG" {
		t.Errorf("got text %q, want PONG (reasoning must not be part of the answer)", got)
	}
	r := w.chats(1)[0]
	if got := r.Body["reasoning_effort"]; got != "high" {
		t.Errorf("got reasoning_effort %v, want high", got)
	}
	if got := r.SystemPrompt(); got != sys {
		t.Errorf("got system message %.200q, want exactly %q", got, sys)
	}

	res, sc = w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG", "thinking": "low"})
	mcpsession.WantOK(t, res, sc)
	r = w.chats(2)[1]
	if got := r.Body["reasoning_effort"]; got != "low" {
		t.Errorf("got reasoning_effort %v, want low", got)
	}
	if got := r.SystemPrompt(); !strings.HasPrefix(got, "You are Cline") {
		t.Errorf("without systemPrompt the system message is %.80q, want Cline's own", got)
	}
}

// TestProviderModelOverride: -P/-m reach the request; afterwards providers.json has its tracked
// fields back (lastUsedProvider, the provider's model) while a change somebody else made during
// the run is kept.
func TestProviderModelOverride(t *testing.T) {
	var w *world
	respond := func(i int, r fakeprovider.Request) fakeprovider.Step {
		// While the CLI waits for the model, the user configures another provider.
		if i == 0 {
			if err := addProvider(w.providers, "ollama", map[string]any{"provider": "ollama", "model": "llama3"}); err != nil {
				return fakeprovider.Text("could not change providers.json: " + err.Error())
			}
		}
		return fakeprovider.Text("PONG from fake-model-2")
	}
	w = newWorld(t, respond, withProviders(func(base string) map[string]any {
		m := providersJSON(base)
		m["lastUsedProvider"] = "lmstudio"
		m["providers"].(map[string]any)["lmstudio"] = map[string]any{
			"settings":  map[string]any{"provider": "lmstudio", "model": "some-model", "baseUrl": "http://127.0.0.1:9/v1"},
			"updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual",
		}
		return m
	}))
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG", "provider": "openai-compatible", "model": "fake-model-2"})
	mcpsession.WantOK(t, res, sc)
	if got := mcpsession.Str(sc, "text"); got != "PONG from fake-model-2" {
		t.Errorf("got text %q", got)
	}
	r := w.chats(1)[0]
	if got := r.Body["model"]; got != "fake-model-2" {
		t.Errorf("the request used model %v, want the override fake-model-2", got)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("got Authorization %q, want openai-compatible's saved key", got)
	}

	after := w.readJSON(w.providers)
	if got := after["lastUsedProvider"]; got != "lmstudio" {
		t.Errorf("got lastUsedProvider %v after the run, want lmstudio restored", got)
	}
	oc := settingsOf(after, "openai-compatible")
	if oc["model"] != "fake-model" || oc["apiKey"] != "sk-test-123" || oc["baseUrl"] != w.prov.BaseURL() {
		t.Errorf("openai-compatible settings after the run: %v, want model fake-model restored and key/baseUrl kept", oc)
	}
	if lm := settingsOf(after, "lmstudio"); lm["model"] != "some-model" {
		t.Errorf("lmstudio settings after the run: %v", lm)
	}
	if ol := settingsOf(after, "ollama"); ol["model"] != "llama3" {
		t.Errorf("the provider added during the run is gone or changed: %v (file %v)", ol, after)
	}
}

// addProvider adds an entry to providers.json the way another tool would (no test helpers: it
// runs on the provider's goroutine).
func addProvider(path, id string, settings map[string]any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	ps, _ := m["providers"].(map[string]any)
	if ps == nil {
		return fmt.Errorf("no providers in %s", b)
	}
	ps[id] = map[string]any{"settings": settings, "updatedAt": "2026-02-02T00:00:00.000Z", "tokenSource": "manual"}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o600)
}

func settingsOf(doc map[string]any, provider string) map[string]any {
	ps, _ := doc["providers"].(map[string]any)
	p, _ := ps[provider].(map[string]any)
	s, _ := p["settings"].(map[string]any)
	return s
}
