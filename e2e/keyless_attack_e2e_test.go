//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// upstreamLine is what the fake provider logs of each request it receives.
var upstreamLine = regexp.MustCompile(`(?m)^upstream method=(\S+) uri="([^"]*)" authorization=(\[[^\]]*\]) x-api-key="([^"]*)"$`)

// keylessEnv is a prepared server environment whose openai-compatible provider (key-less: the
// proxy keeps key) is the test's fake provider, which logs every request it receives.
func keylessEnv(t *testing.T, w egressWorld, key string) *env {
	t.Helper()
	e := prepareEnv(t)
	if err := os.WriteFile(e.providers, []byte(keylessProviders("openai-compatible", "http://"+w.provider+":18080/v1", key)), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// keylessAttackServer is a keylessEnv server with Docker isolation on the test's network.
func keylessAttackServer(t *testing.T, w egressWorld, key string) *env {
	t.Helper()
	e := keylessEnv(t, w, key)
	e.start("--docker-image", mcpsession.FakeImage, "--docker-egress-image", mcpsession.EgressImage, "--docker-network", w.network)
	return e
}

// providerSaw are the requests the fake provider logged: method, raw target, whether it carried key.
func providerSaw(t *testing.T, w egressWorld, key string) (withKey, all []string) {
	t.Helper()
	out, _ := exec.Command("docker", "logs", w.provider).CombinedOutput()
	for _, m := range upstreamLine.FindAllStringSubmatch(string(out), -1) {
		req := m[1] + " " + m[2]
		all = append(all, req)
		if strings.Contains(m[3]+m[4], key) {
			withKey = append(withKey, req)
		}
	}
	return withKey, all
}

// TestKeylessRunCannotMisuseTheKey: a hostile key-less run first makes its API request (the
// marker: it reaches the provider with the real key), then asks the provider's origin for
// everything else a gateway offers — key management, traversal and encoded spellings of other
// paths, TRACE, DELETE — through the forwarder and straight to the proxy with its own token: none
// of it ever reaches the provider with the key, the proxy's refusals say not to retry, and the
// result reports them. An API answer that reflects the request gives the key back to no one.
func TestKeylessRunCannotMisuseTheKey(t *testing.T) {
	w := newEgressWorld(t)
	key := secretKey(t)
	e := keylessAttackServer(t, w, key)
	sc, _ := dockerCall(e, "ask_cline", map[string]any{"prompt": "Attack fake:attack_keyless?marker=/tmp/keyless-marker.txt"})
	wantDockerOK(t, sc)
	var rep map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
		t.Fatalf("report %q: %v", sc["text"], err)
	}
	if rep["marker"] != "ok" || field(rep, "legit", "status") != "200" {
		t.Fatalf("the attack did not run or its API request failed: %v", rep)
	}
	withKey, all := providerSaw(t, w, key)
	if len(withKey) != 2 || withKey[0] != "POST /v1/chat/completions" || withKey[1] != "POST /v1/chat/completions" {
		t.Errorf("requests that reached the provider with the key: %q (all: %q), want the API request and the reflected one", withKey, all)
	}
	refusedByProxy := 0
	for _, side := range []string{"hostile_forwarder", "hostile_direct"} {
		list, _ := rep[side].([]any)
		if len(list) == 0 {
			t.Errorf("%s: no hostile request was sent: %v", side, rep[side])
		}
		for _, h := range list {
			m, _ := h.(map[string]any)
			status := fmt.Sprint(m["status"])
			if status == "200" {
				t.Errorf("%s: %v got through", side, m["req"])
			}
			if strings.Contains(fmt.Sprint(m["head"]), "do not retry") {
				refusedByProxy++
			}
		}
	}
	if want := 2 * 13; refusedByProxy != want { // attack_keyless's list, through the forwarder and straight
		t.Errorf("%d hostile requests were refused by the proxy's policy, want %d: %v", refusedByProxy, want, rep)
	}
	t.Logf("the provider saw %d requests, %d with the key (%q); the proxy refused %d hostile ones", len(all), len(withKey), withKey, refusedByProxy)
	reflect, _ := rep["reflect"].(map[string]any)
	if fmt.Sprint(reflect["status"]) != "200" || !strings.Contains(fmt.Sprint(reflect["head"]), "[removed by cline-mcp]") ||
		fmt.Sprint(reflect["x_echo"]) != "[removed by cline-mcp]" {
		t.Errorf("the reflected answer: %v, want the credential removed from body and header", reflect)
	}
	all2, _ := json.Marshal(sc)
	if strings.Contains(string(all2), key) || strings.Contains(e.sess.Stderr(), key) {
		t.Error("the result or the server's log holds the real key")
	}
	if !strings.Contains(fmt.Sprint(sc["warnings"]), "denied by cline-mcp's policy") {
		t.Errorf("the result does not report the refusals: %v", sc["warnings"])
	}
}

// TestKeylessSpendLimitBinds: a key-less run that reports no cost of its own but sends 13
// completions of 300000 tokens each under maxIterations 1 and maxCostUsd 0.01 gets one answer —
// the proxy counts its usage (JSON answers, then an SSE stream) — its other requests are refused
// and never reach the provider, and the call ends budget_exceeded with what the proxy counted.
// Under maxIterations 1 alone, small completions stop after 1 + 2 answers.
func TestKeylessSpendLimitBinds(t *testing.T) {
	w := newEgressWorld(t)
	key := secretKey(t)
	e := keylessAttackServer(t, w, key)
	for _, tc := range []struct {
		name, query string
		limits      map[string]any
		reached     int
		want        []string
	}{
		{"json", "&usage=300000", map[string]any{"maxIterations": 1, "maxCostUsd": 0.01}, 1,
			[]string{"egress proxy refused the run's provider requests 12 times", "300000 input", "maxCostUsd $0.0100"}},
		{"sse", "&usage=300000&sse=true", map[string]any{"maxIterations": 1, "maxCostUsd": 0.01}, 1,
			[]string{"egress proxy refused the run's provider requests 12 times", "300000 input", "maxCostUsd $0.0100"}},
		{"iterations", "&usage=10", map[string]any{"maxIterations": 1}, 3,
			[]string{"egress proxy refused the run's provider requests 10 times", "3 provider answers", "maxIterations 1 + 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, before := providerSaw(t, w, key)
			args := map[string]any{"prompt": "Spend fake:attack_keyless?marker=/tmp/keyless-marker.txt&spend=13" + tc.query}
			for k, v := range tc.limits {
				args[k] = v
			}
			sc, text := dockerCall(e, "ask_cline", args)
			wantBudgetExceeded(t, sc, text, tc.want...)
			_, after := providerSaw(t, w, key)
			if n := len(after) - len(before); n != tc.reached {
				t.Errorf("the provider got %d of the 13 completions, want %d", n, tc.reached)
			}
			t.Logf("%s: %s", sc["kind"], sc["message"])
		})
	}
}
