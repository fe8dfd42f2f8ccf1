//go:build e2e && unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// Tokens of the credential attack tests.
const (
	credOldAccess  = "workos:old-access-token-0123456789"
	credOldRefresh = "old-refresh-token-0123456789"
	credNewAccess  = "new-access-token-9876543210"
	credNewRefresh = "new-refresh-token-9876543210"
)

// clineSignedIn is a providers.json whose default is the cline provider signed in with OAuth against
// the fake provider, its token expiring in a minute (before any run's time limit), plus another
// provider's key.
func clineSignedIn(t *testing.T, baseURL string) string {
	t.Helper()
	doc := map[string]any{"version": 1, "lastUsedProvider": "cline", "modes": map[string]any{}, "providers": map[string]any{
		"cline": map[string]any{"settings": map[string]any{"provider": "cline", "model": "fake-model", "baseUrl": baseURL,
			"auth": map[string]any{"accessToken": credOldAccess, "refreshToken": credOldRefresh, "accountId": "acct-1",
				"expiresAt": time.Now().Add(time.Minute).UnixMilli()}},
			"updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "oauth"},
		"anthropic": map[string]any{"settings": map[string]any{"provider": "anthropic", "apiKey": "sk-other-provider-key"},
			"updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"},
	}}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func credEnv(t *testing.T) (*env, *fakeprovider.Provider) {
	t.Helper()
	e := newDockerEnv(t)
	prov, err := fakeprovider.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prov.Close() })
	prov.SetRefresh(fakeprovider.ClineRefresh(credNewAccess, credNewRefresh, "acct-1"))
	e.writeProviders(clineSignedIn(t, prov.BaseURL()))
	gitInit(t, e.work, map[string]string{"README.md": "hi\n"}) // a writable checkout for the attack's marker
	return e, prov
}

// TestDockerCredentialsNeverComeBack: before the run the host refreshes the
// token that would expire during it (one request to the fake provider's refresh endpoint, with
// the saved refresh token); the container's copy holds the new access token and no refresh token;
// a run that swaps in another account's tokens, or plants a nested userInfo with an endpoint and a
// key, gets none of it into the user's providers.json, with a warning naming the fields.
func TestDockerCredentialsNeverComeBack(t *testing.T) {
	e, prov := credEnv(t)
	const evil = "attacker-c9e4.invalid"
	for i, kind := range []string{"swap", "userinfo"} {
		sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Steal fake:attack_credentials?kind=" + kind +
			"&token=attacker-access-" + evil + "&refresh=attacker-refresh-" + evil + "&base_url=https%3A%2F%2F" + evil + "&api_key=sk-" + evil +
			fmt.Sprintf("&marker=marker-%d.txt", i)})
		wantDockerOK(t, sc)
		rep := report(t, sc)
		if rep[kind] != "ok" {
			t.Fatalf("%s: the attack could not write its copy: %v", kind, rep)
		}
		if rep["refresh_token_in_copy"] != false || rep["access_token_in_copy"] != true {
			t.Errorf("%s: the container's copy held refresh token %v, access token %v; want none and one", kind, rep["refresh_token_in_copy"], rep["access_token_in_copy"])
		}
		raw := mcpsession.ReadFile(t, e.providers)
		if strings.Contains(raw, evil) {
			t.Fatalf("%s: the attack reached the host's providers.json:\n%s", kind, raw)
		}
		auth := mcpsession.Dig(e.readProviders(), "providers", "cline", "settings", "auth").(map[string]any)
		if auth["accessToken"] != "workos:"+credNewAccess || auth["refreshToken"] != credNewRefresh || auth["accountId"] != "acct-1" {
			t.Errorf("%s: the user's cline auth %v, want the host refresh's tokens", kind, auth)
		}
		warns := fmt.Sprint(sc["warnings"])
		want := map[string]string{"swap": "settings.auth.refreshToken", "userinfo": "settings.auth.metadata.userInfo.baseUrl"}[kind]
		if !strings.Contains(warns, "wrote credentials") || !strings.Contains(warns, want) || strings.Contains(warns, evil) {
			t.Errorf("%s: warnings %s, want the credentials named (%s), no value", kind, warns, want)
		}
	}
	refreshes := prov.Refreshes()
	if len(refreshes) != 1 || refreshes[0].Body["refreshToken"] != credOldRefresh {
		t.Errorf("refresh requests %v, want one with the saved refresh token (the second run's token outlives it)", refreshes)
	}
}

// TestDockerDeepSettingsCopyKeepsTheServerAlive: a container that leaves 4 MiB
// of nested "[" as its settings copy used to kill the server in the merge-back (a Go stack
// overflow: no answer for anyone). Now that call answers with a warning, another call in flight
// meanwhile (held in its container until the first has answered) answers too, and the server
// takes the next call.
func TestDockerDeepSettingsCopyKeepsTheServerAlive(t *testing.T) {
	e, _ := credEnv(t)
	release := filepath.Join(e.work, "release-in-flight")
	var wg sync.WaitGroup
	var inFlight map[string]any
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := e.sess.CallErr(ctx, "ask_cline", map[string]any{"prompt": "go fake:pong?text=STILL-HERE&wait_file=" + release, "cwd": e.work, "isolation": "docker"}, "tok-in-flight")
		if err != nil {
			t.Errorf("the call in flight got no answer: %v", err)
			return
		}
		inFlight = mcpsession.Structured(t, res)
	})
	sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Crash fake:attack_credentials?kind=deep"})
	writeFile(t, release, "go\n")
	wg.Wait()
	wantDockerOK(t, sc)
	if rep := report(t, sc); rep["deep"] != "ok" {
		t.Fatalf("the attack could not write its deep copy: %v", rep)
	}
	if w := fmt.Sprint(sc["warnings"]); !strings.Contains(w, "nested deeper than 256") {
		t.Errorf("warnings %s, want one naming the depth limit", w)
	}
	if inFlight["ok"] != true || inFlight["text"] != "STILL-HERE" {
		t.Errorf("the call in flight: %v %v %v", inFlight["kind"], inFlight["message"], inFlight["text"])
	}
	if auth := mcpsession.Dig(e.readProviders(), "providers", "cline", "settings", "auth", "accessToken"); auth != "workos:"+credNewAccess {
		t.Errorf("the user's cline token %v, want the host refresh's", auth)
	}
	if _, after := e.call("ask_cline", map[string]any{"prompt": "Reply fake:pong"}); after["ok"] != true {
		t.Errorf("the server did not answer the next call: %v", after)
	}
}
