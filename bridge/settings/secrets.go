package settings

import (
	"slices"
	"strings"
)

// credentialKeys name the members of a settings document whose string values are credentials:
// the auth fields of ProviderSettings (FINDINGS: schema) and the cloud providers' keys.
var credentialKeys = []string{
	"apikey", "accesstoken", "refreshtoken", "idtoken", "sessiontoken", "secretkey", "secretaccesskey",
	"awssecretkey", "awssessiontoken", "awsaccesskey", "clientsecret", "password", "token",
}

// minSecret is the shortest value taken for a credential; shorter ones would redact ordinary words.
const minSecret = 8

// credentialPath reports a dotted path below a provider block that holds credentials: anything in
// settings.auth, the API key, header values, and members named like credentialKeys.
func credentialPath(p string) bool {
	if p == "settings.auth" || strings.HasPrefix(p, "settings.auth.") || p == "settings.headers" || strings.HasPrefix(p, "settings.headers.") {
		return true
	}
	last := p[strings.LastIndex(p, ".")+1:]
	return slices.Contains(credentialKeys, strings.ToLower(last))
}

// credentialValues are the credential strings anywhere in doc (values of credentialKeys members and
// of headers), each also without the "workos:" prefix the cline provider stores, for the caller to
// redact. Values come from a document parsed within maxDepth, so the walk is bounded.
func credentialValues(doc *object) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if len(s) >= minSecret && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	var walk func(v any, key string, inHeaders bool)
	walk = func(v any, key string, inHeaders bool) {
		switch t := v.(type) {
		case *object:
			headers := strings.EqualFold(key, "headers")
			for _, k := range t.keys {
				walk(t.vals[k], k, headers)
			}
		case []any:
			for _, e := range t {
				walk(e, key, inHeaders)
			}
		case string:
			if inHeaders || slices.Contains(credentialKeys, strings.ToLower(key)) {
				add(t)
				if len(t) > len("workos:") && strings.EqualFold(t[:len("workos:")], "workos:") {
					add(t[len("workos:"):])
				}
			}
		}
	}
	walk(doc, "", false)
	return out
}
