package settings

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
)

// Tokens of the OAuth tests; the old ones are what the user's file holds before the run.
const (
	oldAccess  = "workos:old-access-token-0123456789"
	oldRefresh = "old-refresh-token-0123456789"
	newAccess  = "new-access-token-9876543210"
	newRefresh = "new-refresh-token-9876543210"
)

// fakeProvider is the contract suite's fake provider, with the refresh endpoints the CLI uses.
func fakeProvider(t *testing.T) *fakeprovider.Provider {
	t.Helper()
	p, err := fakeprovider.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.SetRefresh(fakeprovider.ClineRefresh(newAccess, newRefresh, "acct-1"))
	return p
}

// clineSignedIn is a providers.json whose default is the cline provider signed in with OAuth against
// baseURL ("" = none), its token expiring at expires (zero: no expiresAt).
func clineSignedIn(t testing.TB, baseURL string, expires time.Time) []byte {
	t.Helper()
	auth := map[string]any{"accessToken": oldAccess, "refreshToken": oldRefresh, "accountId": "acct-1"}
	if !expires.IsZero() {
		auth["expiresAt"] = expires.UnixMilli()
	}
	settings := map[string]any{"provider": "cline", "model": "m", "auth": auth}
	if baseURL != "" {
		settings["baseUrl"] = baseURL
	}
	doc := map[string]any{"version": 1, "lastUsedProvider": "cline", "modes": map[string]any{}, "providers": map[string]any{
		"cline":     map[string]any{"settings": settings, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "oauth"},
		"anthropic": map[string]any{"settings": map[string]any{"provider": "anthropic", "apiKey": "sk-ant-other-key"}},
	}}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func oauthStore(t testing.TB, host []byte) *Store {
	t.Helper()
	s := realStore(t)
	s.LockPath = LockPath(s.Path)
	writeReal(t, s.Path, host, 0o600)
	return s
}

func authOf(t *testing.T, data []byte, id string) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	p, _ := doc["providers"].(map[string]any)
	b, _ := p[id].(map[string]any)
	s, _ := b["settings"].(map[string]any)
	a, _ := s["auth"].(map[string]any)
	return a
}

// TestEnsureFreshRefreshesLikeTheCLI: a token that would expire during a container run is refreshed
// on the host against the cline provider's refresh endpoint, with the request the CLI sends, and
// the user's file gets what the CLI would write; the container's copy then holds the new access
// token and no refresh token.
func TestEnsureFreshRefreshesLikeTheCLI(t *testing.T) {
	prov := fakeProvider(t)
	prov.SetRefresh(func(fakeprovider.Request) (int, any) {
		return http.StatusOK, map[string]any{"success": true, "data": map[string]any{
			"accessToken": newAccess, "refreshToken": newRefresh, "tokenType": "Bearer",
			"expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano),
			"userInfo": map[string]any{"clineUserId": "acct-1", "email": "u@example.invalid", "accounts": []any{"a"},
				"baseUrl": "https://elsewhere.invalid", "nested": map[string]any{"apiKey": "sk-x"}},
		}}
	})
	for name, expires := range map[string]time.Time{
		"expired":                        time.Now().Add(-time.Hour),
		"expires during the run":         time.Now().Add(10 * time.Minute),
		"no expiresAt, not a JWT":        {},
		"valid, but within the CLI's 5m": time.Now().Add(10*time.Minute + 4*time.Minute),
	} {
		t.Run(name, func(t *testing.T) {
			s := oauthStore(t, clineSignedIn(t, prov.BaseURL(), expires))
			before := len(prov.Refreshes())
			f, err := s.EnsureFresh(t.Context(), Override{}, time.Now().Add(10*time.Minute), nil)
			if err != nil {
				t.Fatal(err)
			}
			reqs := prov.Refreshes()[before:]
			if len(reqs) != 1 || reqs[0].Path != fakeprovider.RefreshPath {
				t.Fatalf("got %d refresh requests, want 1 to %s", len(reqs), fakeprovider.RefreshPath)
			}
			if reqs[0].Body["refreshToken"] != oldRefresh || reqs[0].Body["grantType"] != "refresh_token" {
				t.Errorf("the refresh sent %v, want the saved refresh token and grantType refresh_token", reqs[0].Body)
			}
			if f.Refreshed != "cline" || len(f.Warnings) != 0 {
				t.Errorf("got %+v, want cline refreshed without warnings", f)
			}
			for _, v := range []string{"workos:" + newAccess, newAccess, newRefresh} {
				if !strings.Contains(strings.Join(f.Secrets, " "), v) {
					t.Errorf("Secrets %q lack %q", f.Secrets, v)
				}
			}
			host := readReal(t, s.Path)
			auth := authOf(t, host, "cline")
			if auth["accessToken"] != "workos:"+newAccess || auth["refreshToken"] != newRefresh || auth["accountId"] != "acct-1" {
				t.Errorf("the user's cline auth: %v, want the new tokens", auth)
			}
			if exp, _ := auth["expiresAt"].(float64); time.UnixMilli(int64(exp)).Before(time.Now().Add(50 * time.Minute)) {
				t.Errorf("expiresAt %v, want the answer's (an hour ahead, in ms)", auth["expiresAt"])
			}
			meta, _ := auth["metadata"].(map[string]any)
			ui, _ := meta["userInfo"].(map[string]any)
			if meta["tokenType"] != "Bearer" || ui["email"] != "u@example.invalid" || ui["clineUserId"] != "acct-1" || len(ui) != 2 {
				t.Errorf("metadata %v, want tokenType and userInfo's known short strings only", meta)
			}
			if !strings.Contains(string(host), "sk-ant-other-key") {
				t.Errorf("another provider's key was lost:\n%s", host)
			}
			c, err := s.PrivateCopy("", Override{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cp := readReal(t, c.SettingsPath)
			if a := authOf(t, cp, "cline"); a["accessToken"] != "workos:"+newAccess || a["refreshToken"] != nil {
				t.Errorf("the container's copy holds auth %v, want the new access token and no refresh token", a)
			}
		})
	}
}

// TestEnsureFreshLeavesGoodTokensAlone: no request when the token outlives the run by the CLI's
// buffer, when the provider is not an OAuth provider of the CLI, or when it has no refresh token.
func TestEnsureFreshLeavesGoodTokensAlone(t *testing.T) {
	prov := fakeProvider(t)
	jwt := "workos:h." + base64.RawURLEncoding.EncodeToString([]byte(`{"exp":`+jsonInt(time.Now().Add(2*time.Hour).Unix())+`}`)) + ".s"
	tests := map[string][]byte{
		"expires after the run":        clineSignedIn(t, prov.BaseURL(), time.Now().Add(time.Hour)),
		"a JWT whose exp is far ahead": []byte(strings.Replace(string(clineSignedIn(t, prov.BaseURL(), time.Time{})), oldAccess, jwt, 1)),
		"no refresh token":             []byte(strings.Replace(string(clineSignedIn(t, prov.BaseURL(), time.Now().Add(-time.Hour))), `"refreshToken"`, `"otherToken"`, 1)),
		"not an OAuth provider":        []byte(strings.ReplaceAll(string(clineSignedIn(t, prov.BaseURL(), time.Now().Add(-time.Hour))), `"cline"`, `"openai-compatible"`)),
	}
	for name, host := range tests {
		t.Run(name, func(t *testing.T) {
			s := oauthStore(t, host)
			f, err := s.EnsureFresh(t.Context(), Override{}, time.Now().Add(10*time.Minute), nil)
			if err != nil || f.Refreshed != "" || len(f.Warnings) != 0 {
				t.Errorf("got %+v %v, want nothing done", f, err)
			}
			if string(readReal(t, s.Path)) != string(host) {
				t.Errorf("the user's file changed")
			}
		})
	}
	if n := len(prov.Refreshes()); n != 0 {
		t.Errorf("got %d refresh requests, want none", n)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestEnsureFreshFailures: what happens when the host cannot get a token that outlives the run.
func TestEnsureFreshFailures(t *testing.T) {
	prov := fakeProvider(t)
	status := func(code int) fakeprovider.RefreshResponder {
		return func(fakeprovider.Request) (int, any) { return code, map[string]any{"error": "invalid_grant"} }
	}
	tests := []struct {
		name      string
		answer    fakeprovider.RefreshResponder
		provider  string
		expires   time.Time
		wantErr   string // "" = a warning instead
		wantCalls int
	}{
		{"rejected (401), token expired", status(401), "", time.Now().Add(-time.Minute), "the refresh was rejected (HTTP 401)", 1},
		{"rejected (400), token still valid a while", status(400), "", time.Now().Add(8 * time.Minute), "the refresh was rejected (HTTP 400)", 1},
		{"server error, token expired", status(503), "", time.Now().Add(-time.Minute), "HTTP 503", 1},
		{"server error, token still valid a while: run with a warning", status(503), "", time.Now().Add(8 * time.Minute), "", 1},
		{"invalid answer, unknown expiry", func(fakeprovider.Request) (int, any) { return 200, map[string]any{"success": false} }, "", time.Time{}, "no known expiry", 1},
		{"oca cannot be refreshed on the host", nil, "oca", time.Now().Add(-time.Minute), "does not refresh oca sign-ins", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prov.SetRefresh(tt.answer)
			host := clineSignedIn(t, prov.BaseURL(), tt.expires)
			if tt.provider != "" {
				host = []byte(strings.ReplaceAll(string(host), `"cline"`, `"`+tt.provider+`"`))
			}
			s := oauthStore(t, host)
			before := len(prov.Refreshes())
			f, err := s.EnsureFresh(t.Context(), Override{}, time.Now().Add(10*time.Minute), nil)
			if got := len(prov.Refreshes()) - before; got != tt.wantCalls {
				t.Errorf("got %d refresh requests, want %d", got, tt.wantCalls)
			}
			if string(readReal(t, s.Path)) != string(host) {
				t.Errorf("the user's file changed")
			}
			provider := tt.provider
			if provider == "" {
				provider = "cline"
			}
			if tt.wantErr == "" {
				t.Logf("%v", f.Warnings)
				if err != nil || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "may fail authentication") {
					t.Errorf("got %+v %v, want one warning and no error", f, err)
				}
				return
			}
			var ae *AuthError
			if !errors.As(err, &ae) || ae.Provider != provider {
				t.Fatalf("got %v, want an AuthError for %s", err, provider)
			}
			t.Logf("%s", err)
			if msg := err.Error(); !strings.Contains(msg, tt.wantErr) || !strings.Contains(msg, "`cline auth "+provider+"`") || strings.Contains(msg, oldRefresh) {
				t.Errorf("got %q, want it to say %q and name `cline auth %s`, and no token", msg, tt.wantErr, provider)
			}
		})
	}
}

// TestEnsureFreshCodex: the openai-codex refresh, as the CLI sends it (a form to the token
// endpoint), with the account id read from the id token.
func TestEnsureFreshCodex(t *testing.T) {
	prov := fakeProvider(t)
	idToken := "h." + base64.RawURLEncoding.EncodeToString([]byte(`{"https://api.openai.com/auth":{"chatgpt_account_id":"chatgpt-acct-9"}}`)) + ".s"
	prov.SetCodexRefresh(fakeprovider.CodexRefresh("codex-new-access-0123", "codex-new-refresh-0123", idToken))
	host := []byte(strings.ReplaceAll(string(clineSignedIn(t, "", time.Now().Add(-time.Minute))), `"cline"`, `"openai-codex"`))
	s := oauthStore(t, host)
	s.OAuth.CodexTokenURL = strings.TrimSuffix(prov.BaseURL(), "/v1") + fakeprovider.CodexTokenPath
	f, err := s.EnsureFresh(t.Context(), Override{Provider: "openai-codex"}, time.Now().Add(10*time.Minute), nil)
	if err != nil || f.Refreshed != "openai-codex" {
		t.Fatalf("got %+v %v", f, err)
	}
	reqs := prov.Refreshes()
	if len(reqs) != 1 || reqs[0].Body["grant_type"] != "refresh_token" || reqs[0].Body["refresh_token"] != oldRefresh || reqs[0].Body["client_id"] != codexClientID {
		t.Fatalf("refresh requests %v, want one form with the saved refresh token", reqs)
	}
	auth := authOf(t, readReal(t, s.Path), "openai-codex")
	meta, _ := auth["metadata"].(map[string]any)
	if auth["accessToken"] != "codex-new-access-0123" || auth["refreshToken"] != "codex-new-refresh-0123" || auth["accountId"] != "chatgpt-acct-9" || meta["provider"] != "openai-codex" {
		t.Errorf("the user's openai-codex auth: %v", auth)
	}
}

// TestEnsureFreshEndpointNeverFromTheRun: the refresh goes where the user's own file (or the
// server's environment) says; without a baseUrl, CLINE_API_BASE_URL is used, as by the CLI.
func TestEnsureFreshEndpointFromTheEnvironment(t *testing.T) {
	prov := fakeProvider(t)
	s := oauthStore(t, clineSignedIn(t, "", time.Now().Add(-time.Minute)))
	s.OAuth.Getenv = func(k string) string {
		if k == "CLINE_API_BASE_URL" {
			return strings.TrimSuffix(prov.BaseURL(), "/v1")
		}
		return ""
	}
	if _, err := s.EnsureFresh(t.Context(), Override{Provider: "cline-pass"}, time.Now().Add(time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(prov.Refreshes()); n != 1 {
		t.Fatalf("got %d refreshes, want 1 (cline-pass signs in through cline's block)", n)
	}
}

// TestEnsureFreshOnceUnderTheLock: two container calls that both need a refresh spend the refresh
// token once — the second finds the first's token under the lock.
func TestEnsureFreshOnceUnderTheLock(t *testing.T) {
	prov := fakeProvider(t)
	s := oauthStore(t, clineSignedIn(t, prov.BaseURL(), time.Now().Add(-time.Minute)))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := s.EnsureFresh(context.Background(), Override{}, time.Now().Add(10*time.Minute), nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(prov.Refreshes()); n != 1 {
		t.Errorf("got %d refresh requests, want 1", n)
	}
}

// TestEnsureFreshWaitsForDefaultRuns: a refresh writes the user's file, so it waits for this
// server's default runs (whose CLI writes it too); a cancel while it waits ends it; a container
// retry of a default run refreshes under that run's own hold.
func TestEnsureFreshWaitsForDefaultRuns(t *testing.T) {
	prov := fakeProvider(t)
	s := oauthStore(t, clineSignedIn(t, prov.BaseURL(), time.Now().Add(-time.Minute)))
	run, _, err := s.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := s.EnsureFresh(ctx, Override{}, time.Now().Add(time.Minute), nil)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, ErrCancelled) {
		t.Errorf("got %v, want ErrCancelled", err)
	}
	if _, err := s.EnsureFresh(t.Context(), Override{}, time.Now().Add(time.Minute), run); err != nil {
		t.Errorf("under the run's own hold: %v", err)
	}
	run.End(context.Background())
	if n := len(prov.Refreshes()); n != 1 {
		t.Errorf("got %d refresh requests, want 1", n)
	}
}
