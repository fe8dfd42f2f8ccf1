package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

func (e *env) writeProviders(s string) {
	e.t.Helper()
	mcpsession.WriteSettings(e.t, e.providers, s)
}

func (e *env) readProviders() map[string]any {
	e.t.Helper()
	return mcpsession.ReadJSON(e.t, e.providers)
}

// TestOverrideRunsOnAPrivateCopy: a call with provider/model runs Cline on a private copy of
// providers.json (CLINE_PROVIDER_SETTINGS_PATH); afterwards the user's file holds exactly what it
// held before plus the token the run refreshed, and the copy is gone.
func TestOverrideRunsOnAPrivateCopy(t *testing.T) {
	e := newEnv(t)
	e.writeProviders(mcpsession.ProvidersTwo)
	res, sc := e.call("ask_cline", map[string]any{
		"prompt":   "Reply fake:token_refresh?token=tok-refreshed-1",
		"provider": "openai-native",
		"model":    "gpt-override",
	})
	mcpsession.WantOK(t, res, sc)
	if w, _ := sc["warnings"].([]any); len(w) != 0 {
		t.Errorf("an honest override run gave warnings: %v", w)
	}
	rec := e.records()
	if len(rec) != 1 || !hasPair(rec[0].Argv, "-P", "openai-native") || !hasPair(rec[0].Argv, "-m", "gpt-override") {
		t.Fatalf("override flags not passed: %+v", rec)
	}
	if rec[0].ProvidersPath == e.providers || rec[0].Env["CLINE_PROVIDER_SETTINGS_PATH"] != rec[0].ProvidersPath {
		t.Errorf("the override run used %s (CLINE_PROVIDER_SETTINGS_PATH %q), want a private copy, never %s",
			rec[0].ProvidersPath, rec[0].Env["CLINE_PROVIDER_SETTINGS_PATH"], e.providers)
	}
	if _, err := os.Stat(rec[0].ProvidersPath); !os.IsNotExist(err) {
		t.Errorf("the private copy %s outlived the call (%v)", rec[0].ProvidersPath, err)
	}
	p := e.readProviders()
	if got := mcpsession.Dig(p, "providers", "openai-native", "settings", "auth", "accessToken"); got != "tok-refreshed-1" {
		t.Errorf("refreshed token: got %v, want tok-refreshed-1 merged back", got)
	}
	setDig(p, "tok-saved", "providers", "openai-native", "settings", "auth", "accessToken")
	setDig(p, "2026-01-01T00:00:00.000Z", "providers", "openai-native", "updatedAt")
	if got, want := canonical(t, p), canonical(t, jsonOf(t, mcpsession.ProvidersTwo)); got != want {
		t.Errorf("the user's file changed beyond the refreshed token:\n%s\nwant\n%s", got, want)
	}
	st, err := os.Stat(e.providers)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("providers.json mode %v, want 0600", st.Mode().Perm())
	}
}

// TestOverrideOfUnconfiguredProviderLeavesNoTrace: -P of a provider the user never configured makes
// the CLI write a new block; it stays in the copy, and the user's file is untouched byte for byte.
func TestOverrideOfUnconfiguredProviderLeavesNoTrace(t *testing.T) {
	e := newEnv(t)
	before, err := os.ReadFile(e.providers)
	if err != nil {
		t.Fatal(err)
	}
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Reply please", "provider": "lmstudio", "model": "some-model"})
	mcpsession.WantOK(t, res, sc)
	if rec := e.records(); len(rec) != 1 || rec[0].Provider != "lmstudio" || rec[0].Model != "some-model" {
		t.Fatalf("the run did not use the override: %+v", rec)
	}
	after, err := os.ReadFile(e.providers)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the user's file changed:\n%s\nwant\n%s", after, before)
	}
}

func TestCorruptSettingsUntouchedWithWarning(t *testing.T) {
	e := newEnv(t)
	corrupt := "{ this is not json\n"
	e.writeProviders(corrupt)
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Reply please", "model": "x-model"})
	mcpsession.WantOK(t, res, sc)
	b, err := os.ReadFile(e.providers)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != corrupt {
		t.Errorf("the unparseable file changed: %q", b)
	}
	ws := fmt.Sprint(sc["warnings"])
	if !strings.Contains(ws, "providers.json") && !strings.Contains(ws, "settings") {
		t.Errorf("no warning about the unparseable settings file: %v", ws)
	}
}

func TestInvalidEntryWipeIsRepaired(t *testing.T) {
	e := newEnv(t)
	// One schema-invalid entry makes the real CLI overwrite the whole file with a single `cline`
	// entry (o_invalid_providers_json_entry); the bridge puts the lost providers back.
	bad := strings.Replace(mcpsession.ProvidersTwo, `"model": "gpt-saved",`, `"model": "gpt-saved", "baseUrl": "not a url",`, 1)
	e.writeProviders(bad)
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Reply please"})
	mcpsession.WantOK(t, res, sc)
	p := e.readProviders()
	if mcpsession.Dig(p, "providers", "openai-compatible", "settings", "apiKey") != "sk-test-123" || mcpsession.Dig(p, "providers", "openai-native", "settings", "apiKey") != "sk-native-456" {
		t.Errorf("providers lost by the CLI's wipe were not restored: %v", p)
	}
	if !strings.Contains(fmt.Sprint(sc["warnings"]), "openai") {
		t.Errorf("no warning naming the restored providers: %v", sc["warnings"])
	}
}

// TestStressMixedOverrides: 100 calls at once, half of them overrides each refreshing the token of
// its own OAuth provider on a private copy, half default runs. Afterwards the file is whole, has no
// trace of any override, and every refreshed token is in it.
func TestStressMixedOverrides(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test (skipped with -short)")
	}
	e := newEnv(t, "--max-concurrent", "8")
	const n, providers = 100, 10
	e.writeProviders(withOAuthProviders(t, mcpsession.ProvidersTwo, providers))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			args := map[string]any{"prompt": "go fake:pong", "cwd": e.work}
			if i%2 == 0 {
				id := fmt.Sprintf("tok-%d", i/2%providers)
				args["prompt"] = fmt.Sprintf("go fake:token_refresh?token=%s-at-%03d", id, i)
				args["provider"] = id
				args["model"] = fmt.Sprintf("override-%d", i)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			res := e.sess.Call(ctx, "ask_cline", args)
			if sc := mcpsession.Structured(t, res); sc["ok"] != true {
				t.Errorf("call %d failed: %v %v", i, sc["kind"], sc["message"])
			}
		}(i)
	}
	wg.Wait()
	p := e.readProviders() // fails the test if corrupt
	if p["lastUsedProvider"] != "openai-compatible" {
		t.Errorf("lastUsedProvider %v, want the default kept", p["lastUsedProvider"])
	}
	recs := e.records()
	if len(recs) != n {
		t.Errorf("got %d runs, want %d", len(recs), n)
	}
	// Each provider's refreshes merge in the order its runs end; the last one is in the file and
	// is one of that provider's refreshed tokens.
	for k := 0; k < providers; k++ {
		id := fmt.Sprintf("tok-%d", k)
		if got := mcpsession.Dig(p, "providers", id, "settings", "model"); got != "saved-"+id {
			t.Errorf("%s model %v, want saved-%s (an override reached the file)", id, got, id)
		}
		got, _ := mcpsession.Dig(p, "providers", id, "settings", "auth", "accessToken").(string)
		if !strings.HasPrefix(got, id+"-at-") {
			t.Errorf("%s token %q, want one of its refreshed tokens", id, got)
		}
	}
	for _, r := range recs {
		if r.RefreshedToken == "" && (r.Provider != "openai-compatible" || r.Model != "fake-model") {
			t.Errorf("a default run saw provider %s model %s, want the defaults", r.Provider, r.Model)
		}
	}
}

// withOAuthProviders adds n providers tok-0… signed in with OAuth (model saved-tok-i) to a
// providers.json.
func withOAuthProviders(t *testing.T, base string, n int) string {
	t.Helper()
	m := jsonOf(t, base)
	ps := m["providers"].(map[string]any)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("tok-%d", i)
		ps[id] = map[string]any{
			"settings": map[string]any{"provider": id, "model": "saved-" + id,
				"auth": map[string]any{"accessToken": id + "-old", "refreshToken": id + "-rt", "expiresAt": 1767225600000}},
			"updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "oauth",
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// canonical is a JSON document with sorted keys, for comparing content without key order.
func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func setDig(m map[string]any, v any, path ...string) {
	for _, p := range path[:len(path)-1] {
		next, _ := m[p].(map[string]any)
		if next == nil {
			return
		}
		m = next
	}
	m[path[len(path)-1]] = v
}
