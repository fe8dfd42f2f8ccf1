//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// keylessProviders is a providers.json whose provider (id) calls the test's fake provider with
// key (empty: no apiKey, the key comes from the environment).
func keylessProviders(id, baseURL, key string) string {
	s := map[string]any{"provider": id, "model": "fake-model", "baseUrl": baseURL}
	if key != "" {
		s["apiKey"] = key
	}
	b, _ := json.Marshal(map[string]any{"version": 1, "lastUsedProvider": id, "modes": map[string]any{},
		"providers": map[string]any{id: map[string]any{"settings": s, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}}})
	return string(b)
}

func secretKey(t *testing.T) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "sk-real-" + hex.EncodeToString(b)
}

// masked is key as the call_provider scenario's needle: hex of each byte XOR 0xff, so the
// prompt (the CLI's argv in the container) never holds the key itself.
func masked(key string) string {
	b := []byte(key)
	for i := range b {
		b[i] ^= 0xff
	}
	return hex.EncodeToString(b)
}

// TestKeylessContainer: in provider egress mode, a Docker run of a provider whose key the proxy
// can hold never has the key: its settings copy names the forwarder on its own loopback as the
// baseUrl and holds a per-run placeholder, the key is nowhere in the container (environment,
// every process's environ and cmdline, files under its data dir, HOME and /tmp), and yet the
// provider receives the real key — once, in the provider's own header, with the Authorization
// the run added for another account dropped and no proxy token. The result says the credential
// stayed outside and never prints the key. The same holds for Anthropic's X-Api-Key, and for a
// key that comes from the environment (--docker-env).
func TestKeylessContainer(t *testing.T) {
	w := newEgressWorld(t)
	base := "http://" + w.provider + ":18080/v1"
	for _, tc := range []struct {
		name, provider, header string
		fromEnv                bool
	}{
		{"openai-compatible", "openai-compatible", "Authorization", false},
		{"anthropic", "anthropic", "X-Api-Key", false},
		{"key from the environment", "openai-compatible", "Authorization", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := secretKey(t)
			e := prepareEnv(t)
			settingsKey, env, args := key, []string(nil), []string(nil)
			if tc.fromEnv {
				settingsKey, env, args = "", []string{"OPENAI_API_KEY=" + key}, []string{"--docker-env", "OPENAI_API_KEY"}
			}
			if err := os.WriteFile(e.providers, []byte(keylessProviders(tc.provider, base, settingsKey)), 0o600); err != nil {
				t.Fatal(err)
			}
			e.startWithEnv(env, append(args, "--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage,
				"--docker-network", w.network)...)
			api := "chat/completions" // the API path the proxy lends the key to
			if tc.header == "X-Api-Key" {
				api = "messages"
			}
			prompt := fmt.Sprintf("Call fake:call_provider?path=%s&header=%s&extra_auth=sk-attacker-other-account&needle=%s", api, tc.header, masked(key))
			if tc.fromEnv {
				prompt += "&key=OPENAI_API_KEY"
			}
			sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": prompt})
			wantDockerOK(t, sc)
			var rep map[string]any
			if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
				t.Fatalf("report %q: %v", sc["text"], err)
			}
			if rep["status"] != float64(200) || rep["head"] != "fake provider ok /v1/"+api {
				t.Errorf("the provider was not reached through the proxy: %v", rep)
			}
			if rep["base_url"] != "http://127.0.0.1:3129/v1" || rep["api_key_prefix"] != "sk-cline-mcp-placeholder-" {
				t.Errorf("the run's settings: base_url %v key %v..., want the forwarder and a placeholder", rep["base_url"], rep["api_key_prefix"])
			}
			if found, ok := rep["needle_found"].([]any); !ok || len(found) != 0 {
				t.Errorf("the real key was inside the container at %v", rep["needle_found"])
			}
			enf, _ := enforcementOf(t, sc)
			if enf["credentialOutside"] != true || !strings.Contains(fmt.Sprint(enf["summary"]), "stayed outside") {
				t.Errorf("enforcement %v, want the credential outside", enf)
			}
			out, _ := exec.Command("docker", "logs", w.provider).CombinedOutput()
			want := fmt.Sprintf(`authorization=["Bearer %s"] x-api-key="" proxy-authorization=""`, key)
			if tc.header == "X-Api-Key" {
				want = fmt.Sprintf(`authorization=[] x-api-key=%q proxy-authorization=""`, key)
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("the provider did not get the real key alone (%s); it logged:\n%s", want, out)
			}
			if all, _ := json.Marshal(sc); strings.Contains(string(all), key) {
				t.Errorf("the result holds the real key: %s", all)
			}
			if strings.Contains(e.sess.Stderr(), key) {
				t.Error("the server's log holds the real key")
			}
		})
	}
}

// TestKeylessNotForOAuthOrOpen: a provider that signs in with OAuth (cline) keeps today's
// least-privilege copy in provider mode, and egress open has no proxy to hold any key; the
// result says why the credential was inside. (With egress open the key search of
// TestKeylessContainer finds the key in the copy: the search works.)
func TestKeylessNotForOAuthOrOpen(t *testing.T) {
	w := newEgressWorld(t)
	e := prepareEnv(t)
	key := secretKey(t)
	if err := os.WriteFile(e.providers, []byte(keylessProviders("openai-compatible", "http://"+w.provider+":18080/v1", key)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.start("--docker-image", mcpsession.FakeImage, "--docker-egress", "open", "--docker-network", w.network)
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Call fake:call_provider?needle=" + masked(key)})
	wantDockerOK(t, sc)
	// The search that finds nothing in TestKeylessContainer finds the key where it is.
	var rep map[string]any
	_ = json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep)
	if found, _ := rep["needle_found"].([]any); !strings.Contains(fmt.Sprint(found), "providers.json") {
		t.Errorf("egress open: the key search found %v, want the settings copy", rep["needle_found"])
	}
	enf, _ := enforcementOf(t, sc)
	if enf["credentialOutside"] != false || !strings.Contains(fmt.Sprint(enf["credentialInside"]), "egress open") {
		t.Errorf("egress open: enforcement %v, want the credential inside because of egress open", enf)
	}

	e2 := prepareEnv(t)
	oauth := `{"version":1,"lastUsedProvider":"cline","providers":{"cline":{"settings":{"provider":"cline","model":"m","auth":{"accessToken":"at-123","expiresAt":4102444800000}},"updatedAt":"2026-01-01T00:00:00.000Z","tokenSource":"oauth"}}}`
	if err := os.WriteFile(e2.providers, []byte(oauth), 0o600); err != nil {
		t.Fatal(err)
	}
	e2.start("--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage, "--docker-network", w.network)
	sc, _ = dockerCall(e2, "ask_cline", map[string]any{"prompt": "Reply with PONG"})
	wantDockerOK(t, sc)
	enf, _ = enforcementOf(t, sc)
	if enf["credentialOutside"] != false || !strings.Contains(fmt.Sprint(enf["credentialInside"]), "provider cline cannot be proxied") {
		t.Errorf("cline: enforcement %v, want the credential inside with the reason", enf)
	}
}

// TestKeylessCost measures, only with CLINE_MCP_KEYLESS_BENCH=<n> (n ≥ 5; `make bench` sets it),
// what keeping the key outside costs a Docker call in provider egress mode, alternating n calls of
// each after a warm-up: the fake CLI calls its provider (call_provider) once per call, key-less
// (openai-compatible: the forwarder on its loopback, the proxy adds the key) and with the key in
// the container as before (deepseek, which the proxy does not stand in for: the request goes
// through HTTP_PROXY to the same fake provider). It logs the p50s and their ratio, and asserts only
// that every call reached the provider and which side kept the key.
func TestKeylessCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CLINE_MCP_KEYLESS_BENCH"))
	if n < 5 {
		t.Skip("set CLINE_MCP_KEYLESS_BENCH=<n ≥ 5> to measure what a key-less call costs")
	}
	w := newEgressWorld(t)
	base := "http://" + w.provider + ":18080/v1"
	server := func(provider string) *env {
		e := prepareEnv(t)
		if err := os.WriteFile(e.providers, []byte(keylessProviders(provider, base, secretKey(t))), 0o600); err != nil {
			t.Fatal(err)
		}
		e.start("--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage, "--docker-network", w.network)
		return e
	}
	keyless, keyed := server("openai-compatible"), server("deepseek")
	call := func(e *env, outside bool) time.Duration {
		start := time.Now()
		sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Call fake:call_provider?path=chat/completions"})
		d := time.Since(start)
		wantDockerOK(t, sc)
		if !strings.Contains(mcpsession.Str(sc, "text"), "fake provider ok /v1/chat/completions") {
			t.Fatalf("the provider was not reached: %s", sc["text"])
		}
		if enf, _ := enforcementOf(t, sc); enf["credentialOutside"] != outside {
			t.Fatalf("credentialOutside %v, want %v", enf["credentialOutside"], outside)
		}
		return d
	}
	call(keyless, true)
	call(keyed, false)
	var kl, kd []time.Duration
	for range n {
		kl = append(kl, call(keyless, true))
		kd = append(kd, call(keyed, false))
	}
	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("keyless Docker call p50 %v (min %v, max %v); key inside p50 %v (min %v, max %v); keyless/key inside %.3f (n=%d each, alternated)",
		p50(kl), slices.Min(kl), slices.Max(kl), p50(kd), slices.Min(kd), slices.Max(kd), float64(p50(kl))/float64(p50(kd)), n)
}
