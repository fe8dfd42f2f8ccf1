package settings

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

// OAuth is how the host refreshes an OAuth sign-in before a container run (EnsureFresh), the way the
// Cline CLI 3.0.65 refreshes it during a run (cline/cline sdk/packages/core/src/auth/cline.ts and
// codex.ts). The zero value refreshes against the real endpoints with the CLI's 30 s timeout.
//
// Where a refresh goes never comes from anything a run could write: the `cline` provider's endpoint
// is <baseUrl's origin>/api/v1/auth/refresh with the baseUrl of the cline block in the user's
// providers.json (a merge-back never carries a baseUrl; EnsureFresh reads the user's file, never a
// copy), else CLINE_API_BASE_URL, else CLINE_ENVIRONMENT (staging, local), else api.cline.bot — the
// CLI's own order; openai-codex's is fixed, like the CLI's. Tests point cline at a fake provider
// through the baseUrl, and openai-codex through CodexTokenURL, which no flag or variable sets.
type OAuth struct {
	Client *http.Client // nil = a client with the CLI's 30 s timeout
	// Getenv is the server's environment (CLINE_API_BASE_URL, CLINE_ENVIRONMENT, read as the CLI
	// reads them); nil reads nothing.
	Getenv        func(string) string
	CodexTokenURL string           // "" = codexTokenURL; set by tests only
	Now           func() time.Time // nil = time.Now
}

const (
	// refreshBuffer is the CLI's DEFAULT_REFRESH_BUFFER_MS: a token that expires within it counts as expired.
	refreshBuffer = 5 * time.Minute
	// retryableGrace is the CLI's DEFAULT_RETRYABLE_TOKEN_GRACE_MS: after a failed refresh, a token
	// valid this much longer is still used.
	retryableGrace = 30 * time.Second
	refreshTimeout = 30 * time.Second
	// maxRefreshBody bounds what a refresh endpoint's answer may hold.
	maxRefreshBody = 1 << 20
)

// oauthStorage names the CLI's OAuth providers (provider-auth-registry.ts) and the block that holds
// each one's credentials: cline-pass signs in through cline's account.
var oauthStorage = map[string]string{"cline": "cline", "cline-pass": "cline", "oca": "oca", "openai-codex": "openai-codex"}

// Fresh is what EnsureFresh did.
type Fresh struct {
	// Refreshed is the provider whose block got new tokens ("" = none was needed).
	Refreshed string
	// Warnings say when the run goes ahead with a token that may expire before its deadline.
	Warnings []string
	// Secrets are the credential values the refresh wrote (access and refresh token, in every form
	// the CLI sends them): the call redacts them from everything it returns.
	Secrets []string
}

// AuthError is a container run that cannot start because its provider's OAuth access token does
// not outlive the run and the host could not refresh it. The message names the provider and the fix.
type AuthError struct {
	Provider string
	Reason   string
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("the OAuth sign-in of provider %q cannot be used for a container run: %s. A container never gets the refresh token, so its access token must outlive the run: sign in again on this machine with `cline auth %s`, or run with isolation host",
		e.Provider, e.Reason, e.Provider)
}

// EnsureFresh makes sure the access token a container run of ov's provider gets (PrivateCopy holds
// it without its refresh token) outlives until, the run's deadline: when the provider is one of
// the CLI's OAuth providers and its token expires within refreshBuffer of until (or its expiry is
// unknown, which the CLI treats as expired), the host refreshes it as the CLI would and writes the
// new tokens into the user's file, as one read-modify-write under the cross-process lock, after the
// default runs of this Store in flight (their CLIs write the file) have ended. A refresh that
// fails, or a provider the host cannot refresh (oca), gives an *AuthError unless the current token
// is still good for retryableGrace (then a warning). A provider without OAuth credentials, a
// missing or unusable file: nothing to do. ctx ending while it waits gives ErrCancelled. under is the
// default run a container retry belongs to (it already holds the shared hold the write would
// otherwise wait for), or nil.
func (s *Store) EnsureFresh(ctx context.Context, ov Override, until time.Time, under *Run) (Fresh, error) {
	return s.ensureFresh(ctx, ov, until, under != nil)
}

func (s *Store) ensureFresh(ctx context.Context, ov Override, until time.Time, held bool) (Fresh, error) {
	data, err := s.readFile(s.Path)
	if err != nil {
		return Fresh{}, nil // PrivateCopy says what it could not copy
	}
	doc, err := parseObject(data)
	if err != nil {
		return Fresh{}, nil
	}
	provider, storage, cr := oauthCredentials(doc, ov)
	if cr == nil || !s.OAuth.expiresBefore(cr, until) {
		return Fresh{}, nil
	}
	if !held {
		if err := s.runs.Lock(ctx); err != nil {
			return Fresh{}, fmt.Errorf("%w: %w", ErrCancelled, err)
		}
		defer s.runs.Unlock()
	}
	rf := &refresher{s: s, ctx: ctx, provider: provider, storage: storage, until: until, current: cr}
	warns := s.update(ctx, "the refreshed OAuth token could not be saved", rf.apply)
	return rf.outcome(warns)
}

// credentials are an OAuth sign-in as the CLI reads it from a provider block.
type credentials struct {
	access, refresh string
	expires         time.Time // zero: unknown, which the CLI treats as expired
	accountID       string
}

// oauthCredentials finds the credentials a run of ov would use: the run's provider (ov's, else
// lastUsedProvider, else cline, as the CLI picks it) when it is an OAuth provider, read from its
// storage block. nil when there is nothing the CLI would refresh (no access or no refresh token).
func oauthCredentials(doc *object, ov Override) (provider, storage string, cr *credentials) {
	provider = ov.Provider
	if provider == "" {
		provider, _ = doc.vals["lastUsedProvider"].(string)
	}
	provider = strings.ToLower(strings.TrimSpace(provider))
	if provider == "" {
		provider = "cline"
	}
	storage, ok := oauthStorage[provider]
	if !ok {
		return provider, "", nil
	}
	auth := blockSettings(doc.getObject("providers").getObjectOrNil(storage)).getObjectOrNil("auth")
	if auth == nil {
		return provider, storage, nil
	}
	str := func(k string) string { v, _ := auth.vals[k].(string); return strings.TrimSpace(v) }
	c := &credentials{access: str("accessToken"), refresh: str("refreshToken"), accountID: str("accountId")}
	if c.access == "" || c.refresh == "" {
		return provider, storage, nil
	}
	if n, ok := auth.vals["expiresAt"].(json.Number); ok {
		if f, err := n.Float64(); err == nil && f > 0 && f < 1e15 {
			c.expires = time.UnixMilli(int64(f))
		}
	}
	if c.expires.IsZero() {
		c.expires = jwtExpiry(strings.TrimPrefix(c.access, "workos:"))
	}
	return provider, storage, c
}

// jwtExpiry is the exp claim of a JWT (the CLI's fallback when expiresAt is missing); zero when the
// token is not a JWT with one.
func jwtExpiry(token string) time.Time {
	claims := jwtClaims(token)
	if exp, ok := claims["exp"].(float64); ok && exp > 0 && exp < 1e12 {
		return time.Unix(int64(exp), 0)
	}
	return time.Time{}
}

func jwtClaims(token string) map[string]any {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > maxRefreshValue {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil
	}
	var claims map[string]any
	if json.Unmarshal(raw, &claims) != nil {
		return nil
	}
	return claims
}

func (o OAuth) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// expiresBefore reports whether the CLI would count c as expired at until.
func (o OAuth) expiresBefore(c *credentials, until time.Time) bool {
	return c.expires.IsZero() || !until.Before(c.expires.Add(-refreshBuffer))
}

// refresher is one EnsureFresh refresh inside update: the request goes out once, however often
// update re-reads a file that changed under it.
type refresher struct {
	s                 *Store
	ctx               context.Context
	provider, storage string
	until             time.Time

	ran       bool // apply ran (the lock was taken)
	tried     bool // the request went out
	res       *refreshed
	err       error
	current   *credentials // as last read (inside the lock once apply ran)
	notNeeded bool         // another process refreshed it meanwhile
	wrote     bool
}

// apply is update's read-modify-write: it refreshes (once) when the file still holds a token that
// needs it, and writes the result into the storage block the way the CLI's saveOAuthCredentials does.
func (rf *refresher) apply(cur []byte, rerr error) ([]byte, []string) {
	rf.ran = true
	if rerr != nil {
		if errors.Is(rerr, fs.ErrNotExist) {
			rf.current = nil // signed out meanwhile: nothing to refresh
		}
		return nil, nil
	}
	doc, err := parseObject(cur)
	if err != nil {
		return nil, nil
	}
	_, _, c := oauthCredentials(doc, Override{Provider: rf.provider})
	rf.current = c
	if c == nil {
		return nil, nil
	}
	if !rf.tried {
		if !rf.s.OAuth.expiresBefore(c, rf.until) {
			rf.notNeeded = true
			return nil, nil
		}
		rf.tried = true
		rf.res, rf.err = rf.s.OAuth.refresh(rf.ctx, rf.storage, doc, c)
	}
	if rf.res == nil {
		return nil, nil
	}
	rf.res.save(doc, rf.storage)
	rf.wrote = true
	return doc.encode(), nil
}

// outcome turns what apply did into EnsureFresh's answer.
func (rf *refresher) outcome(writeWarns []string) (Fresh, error) {
	o := rf.s.OAuth
	switch {
	case rf.notNeeded || (rf.ran && rf.current == nil && !rf.tried):
		return Fresh{}, nil
	case rf.res != nil && rf.wrote && len(writeWarns) == 0:
		f := Fresh{Refreshed: rf.storage, Secrets: rf.res.secrets()}
		if o.expiresBefore(&credentials{expires: rf.res.expires}, rf.until) {
			f.Warnings = append(f.Warnings, fmt.Sprintf("settings: the OAuth token of provider %q was refreshed on the host, but the new one expires at %s, less than %v after this run's time limit; a run that lasts that long may fail authentication, because a container never gets the refresh token",
				rf.provider, rf.res.expires.UTC().Format(time.RFC3339), refreshBuffer))
		}
		return f, nil
	case rf.res != nil:
		return Fresh{Secrets: rf.res.secrets()}, &AuthError{Provider: rf.provider, Reason: "its token was refreshed on the host, but the new one could not be saved (" + strings.Join(writeWarns, "; ") + ")"}
	}
	var reason string
	switch {
	case !rf.ran:
		reason = "the settings file could not be locked to refresh the token (" + strings.Join(writeWarns, "; ") + ")"
	case rf.err != nil:
		reason = "the refresh on the host failed: " + rf.err.Error()
	default:
		reason = "the refresh on the host failed"
	}
	c := rf.current
	var rejected *refreshRejected
	if c != nil && !c.expires.IsZero() && !errors.As(rf.err, &rejected) && c.expires.Sub(o.now()) > retryableGrace {
		return Fresh{Warnings: []string{fmt.Sprintf("settings: the OAuth token of provider %q expires at %s, less than %v after this run's time limit, and %s; the run uses it as it is and may fail authentication if it lasts that long",
			rf.provider, c.expires.UTC().Format(time.RFC3339), refreshBuffer, reason)}}, nil
	}
	switch {
	case c != nil && c.expires.IsZero():
		reason = "its token has no known expiry (the CLI treats that as expired) and " + reason
	case c != nil && c.expires.After(o.now()):
		reason = fmt.Sprintf("its token expires at %s, less than %v after this run's time limit, and %s", c.expires.UTC().Format(time.RFC3339), refreshBuffer, reason)
	default:
		reason = "its token has expired and " + reason
	}
	return Fresh{}, &AuthError{Provider: rf.provider, Reason: reason}
}
