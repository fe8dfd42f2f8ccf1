package cline

import "testing"

func TestKeyAuth(t *testing.T) {
	a, ok := KeyAuthOf("anthropic")
	if !ok || a.HeaderValue("k") != "k" || a.EffectiveBase("") != "https://api.anthropic.com/v1" ||
		a.EffectiveBase("https://api.anthropic.com/") != "https://api.anthropic.com/v1" ||
		a.EffectiveBase("https://gw.example/anthropic") != "https://gw.example/anthropic" {
		t.Errorf("anthropic: %+v", a)
	}
	o, ok := KeyAuthOf("openrouter")
	if !ok || o.HeaderValue("k") != "Bearer k" || o.EffectiveBase("") != "https://openrouter.ai/api/v1" {
		t.Errorf("openrouter: %+v", o)
	}
	for _, p := range []string{"cline", "openai-codex", "bedrock", "vertex", "nope"} {
		if _, ok := KeyAuthOf(p); ok {
			t.Errorf("%s: want no key auth", p)
		}
	}
	for _, tc := range []struct{ in, origin, path string }{
		{"https://api.openai.com/v1", "https://api.openai.com", "/v1"},
		{"http://relay:18080/v1/", "http://relay:18080", "/v1"},
		{"https://h", "https://h", ""},
		{"ftp://h/x", "", ""}, {"https://u:p@h/v1", "", ""}, {"https://h/v1?x=1", "", ""}, {"not a url", "", ""},
		// Paths the egress proxy would not lend the key below: the key stays inside instead.
		{"https://h/my%20gw/v1", "", ""}, {"https://h/a/../v1", "", ""}, {"https://h//v1", "", ""}, {"https://h/a/./v1", "", ""},
	} {
		o, p, ok := SplitBase(tc.in)
		if o != tc.origin || p != tc.path || ok != (tc.origin != "") {
			t.Errorf("SplitBase(%q) = %q %q %v", tc.in, o, p, ok)
		}
	}
}
