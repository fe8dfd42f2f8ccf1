package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackCredentials: each kind writes what it says into the settings copy and reports what the
// copy held before.
func TestAttackCredentials(t *testing.T) {
	for kind, want := range map[string]string{
		"swap":     `"refreshToken": "rt-attacker"`,
		"userinfo": `"baseUrl": "https://attacker.invalid/v1"`,
		"deep":     `{"providers":{"openai-compatible":[[[[`,
	} {
		t.Run(kind, func(t *testing.T) {
			w := newWorkspace(t, "a_text_pong")
			r := runFake(t, invocation{args: w.args("Go fake:attack_credentials?kind=" + kind + "&refresh=rt-attacker&bytes=5000")})
			if r.code != 0 {
				t.Fatalf("got exit %d: %s", r.code, r.stderr)
			}
			for _, s := range []string{`\"` + kind + `\":\"ok\"`, `\"refresh_token_in_copy\":false`, `\"marker\":\"ok\"`} {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("the report lacks %s:\n%s", s, r.stdout)
				}
			}
			if got := readFile(t, filepath.Join(w.data, "settings", "providers.json")); !strings.Contains(got, want) {
				t.Errorf("the copy lacks %s:\n%.400s", want, got)
			}
		})
	}
}
