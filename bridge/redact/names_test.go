package redact

import (
	"slices"
	"testing"
)

func TestSecretsFromEnv(t *testing.T) {
	tests := []struct {
		entry  string
		secret bool
	}{
		{"OPENAI_API_KEY=sk-env-789", true},
		{"ANTHROPIC_API_KEY=ant-123456", true},
		{"NVIDIA_KEY=nv-123456", true},
		{"APIKEY=plain-apikey", true},
		{"KEY=just-a-key", true},
		{"GITHUB_TOKEN=ghp-value-1", true},
		{"GH_TOKEN_V2=gh-value-2", true},
		{"HF_HUB_TOKEN=hf-value-3", true},
		{"SECRET=secret-1", true},
		{"CLIENT_SECRET=secret-2", true},
		{"AWS_SECRET_ACCESS_KEY=aws-secret", true},
		{"PASSWORD=password-1", true},
		{"DB_PASSWD=passwd-1", true},
		{"PGPASSWORD=pgpass-1", true},
		{"DB_PASS=dbpass-1", true},
		{"SERVICE_CREDENTIALS=creds-1", true},
		{"AUTH=auth-value-1", true},
		{"AUTH_TOKEN=auth-value-2", true},
		{"openai_api_key=lower-case-1", true},
		{"NPM_CONFIG__AUTHTOKEN=npm-auth-1", true},
		{"CLINE_NO_AUTO_UPDATE=1", false},
		{"PATH=/usr/local/bin:/usr/bin", false},
		{"HOME=/home/user", false},
		{"TERM=xterm-256color", false},
		{"KEYBOARD_LAYOUT=us-intl", false},
		{"KEYMAP=dvorak-x", false},
		{"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", false},
		{"TOKENIZERS_PARALLELISM=false", false},
		{"GIT_AUTHOR_NAME=Jane Doe", false},
		{"AUTHOR=someone-1", false},
		{"MAX_TOKENS=4096000", false},
		{"TOKEN_PATH=/run/token", false},
		{"GOOGLE_APPLICATION_CREDENTIALS=/home/u/key.json", false},
		{"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", false},
		{"MONKEY=banana-bread", false},
		{"PWD=/home/u/src/app", false},
		{"API_KEY=", false},
		{"NOEQUALSIGN_TOKEN", false},
		{"CLINE_DATA_DIR=/tmp/data", false},
		{"CLINE_SESSION_BACKEND_MODE=local", false},
	}
	for _, tc := range tests {
		t.Run(tc.entry, func(t *testing.T) {
			got := SecretsFromEnv([]string{tc.entry})
			_, value, _ := cutEq(tc.entry)
			if tc.secret && !slices.Equal(got, []string{value}) {
				t.Errorf("got %q, want [%q]", got, value)
			}
			if !tc.secret && len(got) != 0 {
				t.Errorf("got %q, want none", got)
			}
		})
	}
	got := SecretsFromEnv([]string{"A_TOKEN=same-value", "B_TOKEN=same-value", "HOME=/x", "C_KEY=other-value"})
	if want := []string{"same-value", "other-value"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q (deduplicated, in order)", got, want)
	}
}

func cutEq(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func TestSecretsFromJSON(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"cline providers.json", `{"version":1,"lastUsedProvider":"openai-compatible","providers":{"openai-compatible":{"settings":{"apiKey":"sk-test-123","model":"fake-model","baseUrl":"http://127.0.0.1:18080/v1","provider":"openai-compatible"},"updatedAt":"2026-01-01T00:00:00.000Z","tokenSource":"manual"}}}`, []string{"sk-test-123"}},
		{"oauth block", `{"providers":{"cline":{"settings":{"provider":"cline","auth":{"accessToken":"at-1","refreshToken":"rt-2","expiresAt":1790000000,"accountId":"acct-3"}}}}}`, []string{"at-1", "rt-2"}},
		{"all key spellings", `{"api_key":"a1","token":"a2","secret":"a3","password":"a4","key":"a5","authorization":"a6","clientSecret":"a7","sessionToken":"a8","Credential":"a9","X-Api-Key":"a10"}`, []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10"}},
		{"headers and arrays", `{"headers":{"Authorization":"Bearer xyz-1"},"list":[{"apiKey":"in-array"},"apiKey",{"nested":[{"token":"deep"}]}]}`, []string{"Bearer xyz-1", "in-array", "deep"}},
		{"non-string values ignored", `{"apiKey":null,"token":123,"secret":{"password":"inner"},"key":["x"],"password":""}`, []string{"inner"}},
		{"metadata keys skipped", `{"tokenSource":"manual","inputTokens":"5","keyId":"k-1","expiresAt":"2026","model":"m"}`, nil},
		{"duplicates once", `{"a":{"apiKey":"dup"},"b":{"apiKey":"dup"}}`, []string{"dup"}},
		{"truncated document keeps what it read", `{"apiKey":"early-1","providers":{"x":{"token":"late-2"`, []string{"early-1", "late-2"}},
		{"not json", `apiKey=abc`, nil},
		{"empty", ``, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SecretsFromJSON([]byte(tc.doc)); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"apiKey": true, "api_key": true, "x-api-key": true, "XApiKey": true, "OPENAI_API_KEY": true,
		"accessToken": true, "refresh_token": true, "sessionToken": true, "clientSecret": true,
		"authorization": true, "Authorization": true, "privateKey": true, "passphrase": true,
		"monkey": false, "hotkey": false, "keyboard": false, "inputTokens": false, "tokenSource": false,
		"tokenizer": false, "expiresAt": false, "keyId": false, "author": false, "authorName": false,
		"baseUrl": false, "model": false, "": false,
	} {
		if got := secretName([]byte(name)); got != want {
			t.Errorf("secretName(%q) = %v, want %v", name, got, want)
		}
	}
}
