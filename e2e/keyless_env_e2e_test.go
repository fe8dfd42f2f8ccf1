//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestKeylessOtherKeyInside: the proxy holds the provider's key from the settings, but the user
// also passes OPENAI_API_KEY with --docker-env holding another key of theirs. That variable
// reaches the container unreplaced (the run finds it there: the marker), so the enforcement
// report must not claim the credential stayed outside: credentialOutside is false, and
// credentialVariables and credentialInside name the variable, never its value.
func TestKeylessOtherKeyInside(t *testing.T) {
	w := newEgressWorld(t)
	base := "http://" + w.provider + ":18080/v1"
	settingsKey, otherKey := secretKey(t), secretKey(t)
	e := prepareEnv(t)
	if err := os.WriteFile(e.providers, []byte(keylessProviders("openai-compatible", base, settingsKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.startWithEnv([]string{"OPENAI_API_KEY=" + otherKey}, "--docker-env", "OPENAI_API_KEY",
		"--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage, "--docker-network", w.network)
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Call fake:call_provider?header=Authorization&needle=" + masked(otherKey)})
	wantDockerOK(t, sc)
	var rep map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
		t.Fatalf("report %q: %v", sc["text"], err)
	}
	if found, _ := rep["needle_found"].([]any); len(found) == 0 {
		t.Fatalf("the other key was not found in the container (the marker): %v", rep)
	}
	if rep["api_key_prefix"] != "sk-cline-mcp-placeholder-" {
		t.Errorf("the settings copy's key %v..., want the placeholder (the provider's key is held outside)", rep["api_key_prefix"])
	}
	enf, _ := enforcementOf(t, sc)
	if enf["credentialOutside"] != false || fmt.Sprint(enf["credentialVariables"]) != "[OPENAI_API_KEY]" ||
		!strings.Contains(fmt.Sprint(enf["credentialInside"]), "OPENAI_API_KEY") || strings.Contains(fmt.Sprint(enf["summary"]), "stayed outside") {
		t.Errorf("enforcement %v, want credentialOutside false naming OPENAI_API_KEY", enf)
	}
	all, _ := json.Marshal(sc)
	for _, k := range []string{settingsKey, otherKey} {
		if strings.Contains(string(all), k) || strings.Contains(e.sess.Stderr(), k) {
			t.Errorf("a key is in the result or the server's log")
		}
	}
}
