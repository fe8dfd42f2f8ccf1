package cline

import (
	"net/url"
	"strings"
)

// KeyAuth is how a provider of PolicyCLIVersion calls its API with an API key — the header the
// key travels in, the base URL it uses without a baseUrl setting, and the environment variable
// it falls back to for the key — for the providers whose key an egress proxy can hold instead
// of the run: each honours a baseUrl override (its requests go to <baseUrl>/<path>) and sends
// the key in one header. Observed on the real CLI 3.0.65 (contract TestProvidersHonourBaseURL).
type KeyAuth struct {
	// Header carries the key: "Authorization" (as "Bearer <key>") or "X-Api-Key" (the bare key).
	Header string
	// DefaultBase is the base URL the CLI uses without a baseUrl setting.
	DefaultBase string
	// EnvKey is the variable the CLI reads the key from when the settings hold none.
	EnvKey string
}

var keyAuth = map[string]KeyAuth{
	"anthropic":         {Header: "X-Api-Key", DefaultBase: "https://api.anthropic.com/v1", EnvKey: "ANTHROPIC_API_KEY"},
	"openai-native":     {Header: "Authorization", DefaultBase: "https://api.openai.com/v1", EnvKey: "OPENAI_API_KEY"},
	"openai-compatible": {Header: "Authorization", DefaultBase: "https://api.openai.com/v1", EnvKey: "OPENAI_API_KEY"},
	"openrouter":        {Header: "Authorization", DefaultBase: "https://openrouter.ai/api/v1", EnvKey: "OPENROUTER_API_KEY"},
}

// KeyAuthOf is provider's KeyAuth; ok is false for a provider whose key cannot be kept outside
// the run (OAuth providers such as cline and openai-codex, cloud providers that sign requests,
// and providers not verified against the real CLI).
func KeyAuthOf(provider string) (KeyAuth, bool) {
	a, ok := keyAuth[provider]
	return a, ok
}

// HeaderValue is the header value that carries key.
func (a KeyAuth) HeaderValue(key string) string {
	if a.Header == "Authorization" {
		return "Bearer " + key
	}
	return key
}

// EffectiveBase is the base URL a run of provider calls with the baseUrl setting base ("" for
// none): the provider's default, or base itself — except that the CLI's Anthropic client turns
// exactly https://api.anthropic.com into .../v1.
func (a KeyAuth) EffectiveBase(base string) string {
	base = strings.TrimRight(base, "/")
	switch {
	case base == "":
		return a.DefaultBase
	case a.Header == "X-Api-Key" && base == "https://api.anthropic.com":
		return base + "/v1"
	}
	return base
}

// SplitBase splits a base URL into its origin (scheme://host[:port]) and its path, refusing
// anything but plain http(s) without user info, query or fragment, and a path the egress proxy
// would not lend a key below (PlainBasePath).
func SplitBase(base string) (origin, path string, ok bool) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", "", false
	}
	path = strings.TrimRight(u.EscapedPath(), "/")
	if !PlainBasePath(path) {
		return "", "", false
	}
	return u.Scheme + "://" + u.Host, path, true
}
