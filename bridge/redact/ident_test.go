package redact

import "testing"

// TestIdentifier: names and selectors made of words are identifiers; generated values of the
// same characters are not.
func TestIdentifier(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"IFLA_INET6_TOKEN", true},
		{"C.IFLA_INET6_TOKEN", true},
		{"unix.NL80211_ATTR_KEY", true},
		{"syscall.TOKEN_ALL_ACCESS", true},
		{"settings.client_secret_v2", true},
		{"cfg.Secret", true},
		{"testEd25519PrivateKey", true},
		{"os.Getenv", true},
		{"7Fq2x9Wv4k1Zp0aBcDe", false},
		{"AB3D_F9KQ_ZZ81_XQ2P", false},      // one case, '_', but no words
		{"Xk9_aB3dE_fG7hQ2", false},         // mixed case in its parts
		{"C.Xk9aB3dE4fG7hQ2z", false},       // a selector of a generated value
		{"a1b2c3d4e5f6_a7b8c9d0e1", false},  // hex with '_'
		{"ABCDEFGHIJ1234567890KLMN", false}, // one word: no '_'
		{"x.y", false},
		{"", false},
		{".IFLA", false},
		{"IFLA.", false},
		{"9FOO_BAR", false},
	} {
		if got := identifier([]byte(tc.v)); got != tc.want {
			t.Errorf("identifier(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestTextRedactsGeneratedValuesBesideIdentifiers: the identifier exemption keeps recall: a
// generated value after a secret name is still redacted at the Precise level when it is not
// made of words, also with '_' and '.' in it.
func TestTextRedactsGeneratedValuesBesideIdentifiers(t *testing.T) {
	r := New(nil)
	for _, in := range []string{
		"API_TOKEN = AB3D_F9KQ_ZZ81_XQ2P9",
		"API_TOKEN=Xk9_aB3dE_fG7hQ2zW",
		`"clientSecret": "C.Xk9aB3dE4fG7hQ2z"`,
		"Authorization: Bearer Xk9_aB3dE_fG7hQ2zW",
	} {
		if got := r.Text(in); got == in {
			t.Errorf("Text(%q) kept the value", in)
		}
	}
}
