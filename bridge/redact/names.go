package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// maxJSONDepth bounds the nesting SecretsFromJSON follows; settings files
// nest a few levels.
const maxJSONDepth = 128

// maxNameLen bounds the names secretName looks at; longer identifiers are
// not treated as secret names (they are prose or generated keys).
const maxNameLen = 128

// nonSecretLast lists last words that turn a name into metadata about a
// secret rather than the secret itself (TOKEN_PATH, tokenSource, KEY_ID, ...).
var nonSecretLast = []string{
	"AT", "BUDGET", "CMD", "COMMAND", "COUNT", "DESCRIPTION", "DIR", "DIRECTORY", "DISABLED",
	"ENABLED", "ENDPOINT", "ENV", "EXPIRATION", "EXPIRES", "EXPIRY", "FIELD", "FILE", "FILENAME",
	"FILES", "FORMAT", "HEADER", "HELPER", "HINT", "HOST", "ID", "IDS", "KIND", "LABEL", "LEN",
	"LENGTH", "LIMIT", "LIMITS", "LOCATION", "MAX", "METHOD", "MIN", "MODE", "NAME", "NAMES",
	"PATH", "PORT", "PREFIX", "PROVIDER", "REMAINING", "REQUIRED", "RESET", "SIZE", "SOCK",
	"SOCKET", "SOURCE", "STATUS", "STRATEGY", "TTL", "TIMEOUT", "TYPE", "URI", "URL", "USAGE",
	"USED", "VERSION",
}

// notKeys are words ending in KEY that are not keys.
var notKeys = []string{"DONKEY", "HOCKEY", "HOTKEY", "JOCKEY", "MONKEY", "TURKEY", "WHISKEY"}

// secretName reports whether an identifier (env var, JSON key, header,
// flag or config name) names a secret value. It splits the name into words
// at '_', '-', '.', ' ' and camelCase boundaries and matches whole words, so
// apiKey, OPENAI_API_KEY, x-api-key, clientSecret and sessionToken are
// secret while monkey, KEYBOARD_LAYOUT, inputTokens, TOKENIZERS_PARALLELISM,
// tokenSource and SSH_AUTH_SOCK are not.
func secretName(name []byte) bool {
	if len(name) == 0 || len(name) > maxNameLen || !mayNameSecret(name) {
		return false
	}
	var words [24][]byte
	n := 0
	start := -1
	for i := 0; i <= len(name); i++ {
		var c byte
		if i < len(name) {
			c = name[i]
		}
		alnum := i < len(name) && isAlnum(c)
		if !alnum {
			if start >= 0 {
				if n == len(words) {
					return false
				}
				words[n] = name[start:i]
				n++
				start = -1
			}
			continue
		}
		if start >= 0 && isUpper(c) {
			p := name[i-1]
			// fooBar, foo1Bar, or the last capital of an acronym: HTTPServer.
			if isLower(p) || isDigit(p) || (isUpper(p) && i+1 < len(name) && isLower(name[i+1])) {
				if n == len(words) {
					return false
				}
				words[n] = name[start:i]
				n++
				start = i
			}
		}
		if start < 0 {
			start = i
		}
	}
	if n == 0 {
		return false
	}
	last := words[n-1]
	if inFold(last, nonSecretLast) {
		return false
	}
	for _, w := range words[:n] {
		if eqFold(w, "PUBLIC") || eqFold(w, "PUB") || eqFold(w, "PUBKEY") {
			return false // a public key is not a secret
		}
	}
	for _, w := range words[:n] {
		switch {
		case containsFold(w, "SECRET"), containsFold(w, "PASSWORD"), containsFold(w, "PASSWD"),
			containsFold(w, "PASSPHRASE"), containsFold(w, "CREDENTIAL"):
			return true
		case containsFold(w, "TOKEN") && !hasPrefixFold(w, "TOKENIZ") && !hasSuffixFold(w, "TOKENS"):
			return true
		case eqFold(w, "AUTH"), eqFold(w, "AUTHORIZATION"), eqFold(w, "APIKEY"), eqFold(w, "PRIVATEKEY"):
			return true
		}
	}
	if hasSuffixFold(last, "KEY") && !inFold(last, notKeys) {
		return true
	}
	return n > 1 && eqFold(last, "PASS")
}

// nameNeedles are the parts one of which every secret name contains
// (case-insensitive): SECRET, PASSWORD, PASSWD, PASSPHRASE, PASS,
// CREDENTIAL, TOKEN, AUTH(ORIZATION), *KEY.
var nameNeedles = [...]string{"SECRET", "PASS", "CREDENTIAL", "TOKEN", "AUTH", "KEY"}

// needleFirst maps the upper-case first letter of each needle to it.
var needleFirst = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for k, n := range nameNeedles {
		t[n[0]] = int8(k)
		t[n[0]-'A'+'a'] = int8(k)
	}
	return t
}()

// mayNameSecret is the cheap test secretName starts with: most names
// (type, text, id, ...) contain no needle at all.
func mayNameSecret(name []byte) bool {
	for k := 0; k+3 <= len(name); k++ {
		if x := needleFirst[name[k]]; x >= 0 && hasPrefixFold(name[k:], nameNeedles[x]) {
			return true
		}
	}
	return false
}

// authName reports whether values of name carry an auth scheme word
// ("Bearer", "Basic", ...) that should be kept in front of the redacted part.
func authName(name []byte) bool {
	return hasSuffixFold(name, "AUTHORIZATION") || hasSuffixFold(name, "AUTH")
}

// SecretsFromEnv returns the values of "NAME=value" entries whose NAME looks
// like it holds a secret (*_KEY, *KEY, *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*,
// *CREDENTIAL*, AUTH, ...; case-insensitive, whole words). Names that merely
// describe a secret (TOKEN_PATH, SSH_AUTH_SOCK, TOKENIZERS_PARALLELISM,
// KEYBOARD_*) are skipped, as are empty values and absolute file paths
// (a path is not a secret and redacting it would hide useful output).
// The result is de-duplicated and keeps the order of env.
func SecretsFromEnv(env []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" || seen[value] || looksLikePath(value) {
			continue
		}
		if !secretName([]byte(strings.TrimSpace(name))) {
			continue
		}
		seen[value] = true
		out = append(out, value)
	}
	return out
}

func looksLikePath(v string) bool {
	if strings.ContainsAny(v, " \t\n") {
		return false
	}
	switch {
	case strings.HasPrefix(v, "/"), strings.HasPrefix(v, "~/"), strings.HasPrefix(v, "./"):
		return true
	case len(v) > 3 && isAlpha(v[0]) && v[1] == ':' && (v[2] == '\\' || v[2] == '/'):
		return true
	}
	return false
}

// SecretsFromJSON returns the string values of secret-named keys anywhere in
// a JSON document (apiKey, accessToken, refreshToken, token, secret,
// password, key, authorization, clientSecret, sessionToken, ... at any depth,
// including inside arrays). Keys that describe a secret rather than hold it
// (tokenSource, expiresAt, keyId, inputTokens) are skipped, and so are empty
// values. A malformed document yields the values found before the error, so
// a truncated providers.json still protects what it can, and so does one
// nested deeper than maxJSONDepth (a document a run wrote may be hostile).
// The result is de-duplicated and in document order.
func SecretsFromJSON(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object    bool
		expectKey bool
		secret    bool // the key just read names a secret
	}
	var stack []frame
	var out []string
	seen := map[string]bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			return out
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey {
			if key, ok := tok.(string); ok {
				top.secret = secretName([]byte(key))
				top.expectKey = false
				continue
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.object {
					top.expectKey = true
				}
				if len(stack) == maxJSONDepth {
					return out
				}
				stack = append(stack, frame{object: v == '{', expectKey: v == '{'})
			case '}', ']':
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
			}
			continue
		case string:
			if top != nil && top.object && top.secret && v != "" && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
		if top != nil && top.object {
			top.expectKey = true
		}
	}
}
