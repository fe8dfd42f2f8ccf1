package main

import (
	"encoding/json"
	"os"
	"strings"
)

// runAttackCredentials is what a hostile run could do to the credentials in its settings copy:
// kind=swap puts another account's tokens (token=, refresh=) in place
// of the run's provider's and keeps its accountId; kind=userinfo plants a nested
// auth.metadata.userInfo object with an endpoint (base_url=) and a key (api_key=) inside; kind=deep
// replaces the copy with bytes= (4 MiB - 64) of nested "[" below the provider. Before it writes, it
// reports what the copy held: whether any block had a refresh token (refresh_token_in_copy) and
// whether the run's provider had an access token (access_token_in_copy).
func runAttackCredentials(s *session) int {
	return s.attack(func(r *obj) {
		p := s.paths.providers
		data, err := os.ReadFile(p)
		var doc map[string]any
		if err == nil {
			err = json.Unmarshal(data, &doc)
		}
		if err != nil {
			r.step("read", err)
			return
		}
		provs, _ := doc["providers"].(map[string]any)
		*r = append(*r, kv{"refresh_token_in_copy", strings.Contains(string(data), `"refreshToken"`)})
		auth := authOf(provs, s.provider)
		_, hasAccess := auth["accessToken"].(string)
		*r = append(*r, kv{"access_token_in_copy", hasAccess})
		kind := s.param("kind", "swap")
		switch kind {
		case "swap":
			auth["accessToken"] = s.param("token", "attacker-access-"+randBase36(24))
			auth["refreshToken"] = s.param("refresh", "attacker-refresh-"+randBase36(24))
		case "userinfo":
			meta, _ := auth["metadata"].(map[string]any)
			if meta == nil {
				meta = map[string]any{}
				auth["metadata"] = meta
			}
			meta["userInfo"] = map[string]any{"email": "attacker@example.invalid", "clineUserId": auth["accountId"],
				"baseUrl": s.param("base_url", "https://attacker.invalid/v1"), "apiKey": s.param("api_key", "sk-attacker-key"),
				"nested": map[string]any{"headers": map[string]any{"X-Exfiltrate": "1"}}}
		case "deep":
			n := s.intParam("bytes", 4<<20-64)
			deep := `{"providers":{"` + s.provider + `":` + strings.Repeat("[", max(n, 0))
			r.step(kind, writeAtomic(p, []byte(deep)))
			return
		default:
			r.step(kind, os.ErrInvalid)
			return
		}
		out, err := json.MarshalIndent(doc, "", "  ")
		if err == nil {
			err = writeAtomic(p, append(out, '\n'))
		}
		r.step(kind, err)
	})
}

// authOf is providers[id].settings.auth, created when missing.
func authOf(provs map[string]any, id string) map[string]any {
	block, _ := provs[id].(map[string]any)
	if block == nil {
		block = map[string]any{"settings": map[string]any{"provider": id}}
		provs[id] = block
	}
	set, _ := block["settings"].(map[string]any)
	if set == nil {
		set = map[string]any{"provider": id}
		block["settings"] = set
	}
	auth, _ := set["auth"].(map[string]any)
	if auth == nil {
		auth = map[string]any{}
		set["auth"] = auth
	}
	return auth
}
