package settings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The endpoints of the CLI's refreshes (cline.ts, codex.ts, cline-environment.ts in cline/cline).
const (
	clineRefreshPath = "/api/v1/auth/refresh"
	codexTokenURL    = "https://auth.openai.com/oauth/token"
	codexClientID    = "app_EMoamEEZ73f0CkXaXp7hrann"
	codexAuthClaim   = "https://api.openai.com/auth"
)

// clineEnvironments are the CLI's API base URLs by CLINE_ENVIRONMENT.
var clineEnvironments = map[string]string{
	"production": "https://api.cline.bot",
	"staging":    "https://core-api.staging.int.cline.bot",
	"local":      "http://localhost:7777",
}

// userInfoFields are the members of metadata.userInfo that are kept, each a short string (or null):
// what the Cline API returns about the signed-in user, minus its accounts list. Nothing else of
// userInfo is ever written into the user's file.
var userInfoFields = []string{"subject", "email", "name", "clineUserId"}

// maxShortValue bounds a kept identity string (an id, an e-mail address, a name).
const maxShortValue = 256

// refreshRejected is a refresh the endpoint refused (400, 401, 403): the refresh token is no
// longer valid, only a new sign-in helps.
type refreshRejected struct {
	status int
}

func (e *refreshRejected) Error() string {
	return fmt.Sprintf("the refresh was rejected (HTTP %d)", e.status)
}

// refreshed is the answer of a refresh, as the CLI turns it into credentials.
type refreshed struct {
	access, refresh string // access as stored (cline: with its "workos:" prefix)
	raw             string // access as the endpoint sent it
	expires         time.Time
	accountID       string
	metadata        *object // members to set in auth.metadata
}

// refresh asks storage's endpoint for new tokens. doc is the user's file, read under the lock.
func (o OAuth) refresh(ctx context.Context, storage string, doc *object, c *credentials) (*refreshed, error) {
	switch storage {
	case "cline":
		return o.refreshCline(ctx, o.clineBase(doc), c)
	case "openai-codex":
		u := o.CodexTokenURL
		if u == "" {
			u = codexTokenURL
		}
		return o.refreshCodex(ctx, u, c)
	}
	return nil, fmt.Errorf("cline-mcp does not refresh %s sign-ins on the host", storage)
}

// clineBase is the API base the CLI refreshes the cline provider against: the block's baseUrl,
// else CLINE_API_BASE_URL, else the CLINE_ENVIRONMENT's, else production.
func (o OAuth) clineBase(doc *object) string {
	if s := blockSettings(doc.getObject("providers").getObjectOrNil("cline")); s != nil {
		if b, _ := s.vals["baseUrl"].(string); strings.TrimSpace(b) != "" {
			return strings.TrimSpace(b)
		}
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if b := getenv("CLINE_API_BASE_URL"); b != "" {
		return b
	}
	for _, name := range []string{"CLINE_ENVIRONMENT_OVERRIDE", "CLINE_ENVIRONMENT"} {
		if b, ok := clineEnvironments[strings.ToLower(strings.TrimSpace(getenv(name)))]; ok {
			return b
		}
	}
	return clineEnvironments["production"]
}

func (o OAuth) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{
		Timeout: refreshTimeout,
		// A refresh token is never resent to wherever a redirect points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// post sends one refresh request and reads its answer (at most maxRefreshBody).
func (o OAuth) post(ctx context.Context, endpoint, contentType string, body []byte) ([]byte, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the refresh endpoint %q is not an http(s) URL", endpoint)
	}
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := o.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL
		}
		return nil, fmt.Errorf("POST %s://%s%s: %w", u.Scheme, u.Host, u.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRefreshBody+1))
	if err != nil {
		return nil, fmt.Errorf("POST %s://%s%s: reading the answer: %w", u.Scheme, u.Host, u.Path, err)
	}
	switch {
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, &refreshRejected{status: resp.StatusCode}
	case resp.StatusCode/100 != 2:
		return nil, fmt.Errorf("POST %s://%s%s: HTTP %d", u.Scheme, u.Host, u.Path, resp.StatusCode)
	case len(data) > maxRefreshBody:
		return nil, fmt.Errorf("POST %s://%s%s: the answer is over %d bytes", u.Scheme, u.Host, u.Path, maxRefreshBody)
	}
	return data, nil
}

// refreshCline is refreshClineToken and toClineCredentials of the CLI: POST
// {"refreshToken","grantType":"refresh_token"} as JSON to <base's origin>/api/v1/auth/refresh; the
// answer {"success":true,"data":{accessToken, refreshToken?, tokenType, expiresAt (ISO time),
// userInfo{clineUserId,…}}} gives the new tokens; the access token is stored with the "workos:"
// prefix the CLI sends as its API key.
func (o OAuth) refreshCline(ctx context.Context, base string, c *credentials) (*refreshed, error) {
	b, err := url.Parse(strings.TrimRight(strings.TrimSpace(base), "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("the cline API base URL is not a URL")
	}
	endpoint := b.ResolveReference(&url.URL{Path: clineRefreshPath}).String()
	body, _ := json.Marshal(map[string]string{"refreshToken": c.refresh, "grantType": "refresh_token"})
	data, err := o.post(ctx, endpoint, "application/json", body)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Success bool `json:"success"`
		Data    struct {
			AccessToken  string         `json:"accessToken"`
			RefreshToken *string        `json:"refreshToken"`
			TokenType    string         `json:"tokenType"`
			ExpiresAt    string         `json:"expiresAt"`
			UserInfo     map[string]any `json:"userInfo"`
		} `json:"data"`
	}
	if json.Unmarshal(data, &ans) != nil || !ans.Success || ans.Data.AccessToken == "" {
		return nil, errors.New("invalid token refresh response")
	}
	expires, err := time.Parse(time.RFC3339Nano, ans.Data.ExpiresAt)
	if err != nil {
		return nil, errors.New("invalid token refresh response: expiresAt is not an ISO time")
	}
	r := &refreshed{raw: ans.Data.AccessToken, refresh: c.refresh, expires: expires, accountID: c.accountID, metadata: newObject()}
	r.access = ans.Data.AccessToken
	if !strings.HasPrefix(strings.ToLower(r.access), "workos:") {
		r.access = "workos:" + r.access
	}
	if ans.Data.RefreshToken != nil && *ans.Data.RefreshToken != "" {
		r.refresh = *ans.Data.RefreshToken
	}
	if id, ok := ans.Data.UserInfo["clineUserId"].(string); ok && id != "" {
		r.accountID = id
	}
	if ans.Data.TokenType != "" {
		r.metadata.set("tokenType", ans.Data.TokenType)
	}
	if ans.Data.UserInfo != nil {
		r.metadata.set("userInfo", userInfo(ans.Data.UserInfo))
	}
	return r, r.check()
}

// userInfo keeps the known short string members of a userInfo answer.
func userInfo(m map[string]any) *object {
	o := newObject()
	for _, k := range userInfoFields {
		switch v := m[k].(type) {
		case string:
			if len(v) <= maxShortValue {
				o.set(k, v)
			}
		case nil:
			if _, ok := m[k]; ok {
				o.set(k, nil)
			}
		}
	}
	return o
}

// refreshCodex is refreshAccessToken and toCodexCredentials of the CLI: POST the form
// grant_type=refresh_token&refresh_token=…&client_id=… to auth.openai.com/oauth/token; the answer
// {access_token, refresh_token, expires_in (seconds), id_token?} gives the new tokens, and the
// account id comes from the id token's (else the access token's) ChatGPT claims.
func (o OAuth) refreshCodex(ctx context.Context, endpoint string, c *credentials) (*refreshed, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.refresh}, "client_id": {codexClientID}}
	data, err := o.post(ctx, endpoint, "application/x-www-form-urlencoded", []byte(form.Encode()))
	if err != nil {
		return nil, err
	}
	var ans struct {
		AccessToken  string   `json:"access_token"`
		RefreshToken string   `json:"refresh_token"`
		ExpiresIn    *float64 `json:"expires_in"`
		IDToken      string   `json:"id_token"`
	}
	if json.Unmarshal(data, &ans) != nil || ans.AccessToken == "" || ans.RefreshToken == "" || ans.ExpiresIn == nil {
		return nil, errors.New("invalid token refresh response")
	}
	account := codexAccount(ans.AccessToken, ans.IDToken)
	if account == "" {
		account = c.accountID
	}
	if account == "" {
		return nil, errors.New("invalid token refresh response: no account id in its tokens")
	}
	r := &refreshed{access: ans.AccessToken, raw: ans.AccessToken, refresh: ans.RefreshToken, accountID: account,
		expires: o.now().Add(time.Duration(*ans.ExpiresIn * float64(time.Second))), metadata: newObject()}
	r.metadata.set("provider", "openai-codex")
	return r, r.check()
}

// codexAccount is the CLI's getAccountId: the ChatGPT account of the id token, else the access token.
func codexAccount(access, idToken string) string {
	claims := jwtClaims(idToken)
	if claims == nil {
		claims = jwtClaims(access)
	}
	if auth, ok := claims[codexAuthClaim].(map[string]any); ok {
		if id, ok := auth["chatgpt_account_id"].(string); ok && id != "" {
			return id
		}
	}
	if orgs, ok := claims["organizations"].([]any); ok && len(orgs) > 0 {
		if first, ok := orgs[0].(map[string]any); ok {
			if id, ok := first["id"].(string); ok && id != "" {
				return id
			}
		}
	}
	id, _ := claims["chatgpt_account_id"].(string)
	return id
}

// check bounds what a refresh answer may write into the user's file.
func (r *refreshed) check() error {
	if len(r.access) > maxRefreshValue || len(r.refresh) > maxRefreshValue || len(r.accountID) > maxShortValue {
		return errors.New("invalid token refresh response: a value is too long")
	}
	return nil
}

// save writes r into the storage block of doc like the CLI's saveOAuthCredentials:
// auth = {...auth, accessToken, refreshToken, accountId, expiresAt, metadata: {...metadata, ...new}},
// with the block's updatedAt and tokenSource "oauth".
func (r *refreshed) save(doc *object, storage string) {
	block := doc.getObject("providers").getObjectOrNil(storage)
	settings := blockSettings(block)
	if settings == nil {
		return
	}
	auth := settings.getObject("auth")
	auth.set("accessToken", r.access)
	auth.set("refreshToken", r.refresh)
	if r.accountID != "" {
		auth.set("accountId", r.accountID)
	}
	auth.set("expiresAt", json.Number(fmt.Sprint(r.expires.UnixMilli())))
	if len(r.metadata.keys) > 0 {
		meta := auth.getObject("metadata")
		if meta == nil {
			meta = newObject()
			auth.set("metadata", meta)
		}
		for _, k := range r.metadata.keys {
			meta.set(k, r.metadata.vals[k])
		}
	}
	block.set("updatedAt", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	block.set("tokenSource", "oauth")
}

// secrets are the credential values r holds, in every form a run could show them.
func (r *refreshed) secrets() []string {
	return []string{r.access, r.raw, r.refresh}
}
