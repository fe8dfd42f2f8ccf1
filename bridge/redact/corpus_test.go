package redact

import (
	"strings"
	"testing"
)

// secretCase is one secret shape: in contains secret, which must vanish
// (no prefix of 4 or more bytes may survive) while keep stays.
type secretCase struct {
	name   string
	in     string
	secret string
	keep   []string
}

var corpusLiterals = []string{"custom literal value", `pa"ss\word-77`, "lit-env-9f8e7d"}

var secretCorpus = []secretCase{
	// self-identifying tokens
	{"openai sk", "error: invalid key sk-abcdef1234567890abcdef1234567890 provided", "sk-abcdef1234567890abcdef1234567890", []string{"error: invalid key ", " provided"}},
	{"openai sk-proj", "key=sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678", "sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678", []string{"key="}},
	{"anthropic sk-ant", `x-api-key header was sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEf_GhIj-AAAA.`, "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEf_GhIj-AAAA", []string{"x-api-key header was ", "."}},
	{"masked sk from cline 401", "Incorrect API key provided: sk-test-***123. You can find your API key at https://example.invalid/api-keys.", "sk-test-***123", []string{"Incorrect API key provided: ", ". You can find your API key at https://example.invalid/api-keys."}},
	{"sk in argv", "cline auth --provider openai-compatible --apikey sk-test-123 --modelid fake-model", "sk-test-123", []string{"--apikey ", " --modelid fake-model"}},
	{"sk-other in -k", "cline --json -k sk-other-456 -c /repo", "sk-other-456", []string{"-k ", " -c /repo"}},
	{"nvidia nvapi", "using nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcd for NIM", "nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcd", []string{"using ", " for NIM"}},
	{"github ghp", "remote: ghp_16C7e42F292c6912E7710c838347Ae178B4a rejected", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", []string{"remote: ", " rejected"}},
	{"github gho", "oauth gho_abcdefghijklmnopqrstuvwxyz0123456789", "gho_abcdefghijklmnopqrstuvwxyz0123456789", []string{"oauth "}},
	{"github fine-grained pat", "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV ok", "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV", []string{" ok"}},
	{"gitlab glpat", "glpat-xXyYzZ0123456789abcd used", "glpat-xXyYzZ0123456789abcd", []string{" used"}},
	{"slack bot", "slack xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp done", "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", []string{"slack ", " done"}},
	{"slack user", "xoxp-1111111111-2222222222-abcdefabcdef", "xoxp-1111111111-2222222222-abcdefabcdef", nil},
	{"aws access key id", "aws_access_key_id AKIAIOSFODNN7EXAMPLE region", "AKIAIOSFODNN7EXAMPLE", []string{"aws_access_key_id ", " region"}},
	{"aws session key id", "(ASIAY34FZKBOKMUTVV7A)", "ASIAY34FZKBOKMUTVV7A", []string{"(", ")"}},
	{"google api key", "url ?key=AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe&x", "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", []string{"url ?key=", "&x"}},
	{"google oauth ya29", "token ya29.a0AfH6SMBx3kL9mNpQrStUvWxYz0123456789 end", "ya29.a0AfH6SMBx3kL9mNpQrStUvWxYz0123456789", []string{" end"}},
	{"jwt", "cookie eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c;", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", []string{"cookie ", ";"}},
	{"hugging face", "HF hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567 set", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", []string{" set"}},
	{"stripe live", "sk_live_4eC39HqLyjWDarjtT1zdp7dc charged", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", []string{" charged"}},
	{"groq", "gsk_abcdefghijklmnopqrstuvwxyz0123 x", "gsk_abcdefghijklmnopqrstuvwxyz0123", nil},
	{"xai", "xai-AbCdEfGhIjKlMnOpQrStUv0123 x", "xai-AbCdEfGhIjKlMnOpQrStUv0123", nil},
	{"npm", "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz0123456789", []string{"//registry.npmjs.org/:_authToken="}},
	{"pem private key", `{"out":"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM\n-----END RSA PRIVATE KEY-----\n"}`, `MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM`, []string{"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"}},

	// Bearer and headers
	{"bearer header", "Authorization: Bearer sk-test-123", "sk-test-123", []string{"Authorization: Bearer "}},
	{"bearer opaque token", `curl -H "Authorization: Bearer abc123.def456-ghi" https://x`, "abc123.def456-ghi", []string{`curl -H "Authorization: Bearer `, `" https://x`}},
	{"bearer lowercase", "sent bearer 9f8e7d6c5b4a3210 upstream", "9f8e7d6c5b4a3210", []string{"sent bearer ", " upstream"}},
	{"basic auth header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", []string{"Authorization: Basic "}},
	{"proxy authorization", "Proxy-Authorization: Basic Zm9vOmJhcjEyMw==", "Zm9vOmJhcjEyMw==", []string{"Proxy-Authorization: Basic "}},
	{"x-api-key header", "X-Api-Key: 0123abcd4567efgh", "0123abcd4567efgh", []string{"X-Api-Key: "}},
	{"github token scheme", "Authorization: token 5f4dcc3b5aa765d61d8327deb882cf99", "5f4dcc3b5aa765d61d8327deb882cf99", []string{"Authorization: token "}},

	// JSON keys (keep the key, redact the string value)
	{"json apiKey", `{"apiKey":"super-secret-value-1","model":"m"}`, "super-secret-value-1", []string{`{"apiKey":"`, `","model":"m"}`}},
	{"json api_key spaced", `{"api_key": "plainvalue99"}`, "plainvalue99", []string{`{"api_key": "`, `"}`}},
	{"json accessToken", `{"accessToken":"acc3ss-t0ken-val"}`, "acc3ss-t0ken-val", []string{`"accessToken":"`}},
	{"json refreshToken", `{"refreshToken":"r3fr3sh-val-abc"}`, "r3fr3sh-val-abc", []string{`"refreshToken":"`}},
	{"json token", `{"token":"opaque-tok-value"}`, "opaque-tok-value", []string{`"token":"`}},
	{"json secret", `{"secret":"shh-its-a-secret"}`, "shh-its-a-secret", []string{`"secret":"`}},
	{"json password", `{"user":"bob","password":"correcthorsebattery"}`, "correcthorsebattery", []string{`"user":"bob"`, `"password":"`}},
	{"json key", `{"key": "AbC-dEf-123"}`, "AbC-dEf-123", []string{`"key": "`}},
	{"json authorization keeps scheme", `{"headers":{"Authorization":"Bearer opaque-jwt-like-value"}}`, "opaque-jwt-like-value", []string{`"Authorization":"Bearer `}},
	{"json authorization basic", `{"authorization": "Basic dXNlcjpwYXNz"}`, "dXNlcjpwYXNz", []string{`"authorization": "Basic `}},
	{"json escaped inside string", `{"text":"{\"apiKey\":\"zq-secret-777\",\"x\":1}"}`, "zq-secret-777", []string{`{"text":"{\"apiKey\":\"`, `\",\"x\":1}"}`}},
	{"json double escaped", `"\\\"password\\\":\\\"dbl-esc-999\\\""`, "dbl-esc-999", []string{`\\\"password\\\":\\\"`}},
	{"json upper-case key", `{"APIKEY":"Upper-Case-42"}`, "Upper-Case-42", []string{`"APIKEY":"`}},
	{"json clientSecret", `{"clientSecret":"cl1ent-s3cret"}`, "cl1ent-s3cret", []string{`"clientSecret":"`}},
	{"json sessionToken", `{"sessionToken":"FwoGZXIvYXdzEBYaD"}`, "FwoGZXIvYXdzEBYaD", []string{`"sessionToken":"`}},
	{"json privateKey", `{"privateKey":"MIIBVgIBADANBgkq"}`, "MIIBVgIBADANBgkq", []string{`"privateKey":"`}},
	{"json credentials", `{"credentials":"c-r-e-d-value-123"}`, "c-r-e-d-value-123", []string{`"credentials":"`}},
	{"json value with escaped quote", `{"password":"ab\"cd-efgh","n":1}`, `ab\"cd-efgh`, []string{`"password":"`, `","n":1}`}},
	{"js object single quotes", `const cfg = {apiKey: 'js-object-val-5'};`, "js-object-val-5", []string{"const cfg = {apiKey: '", "'};"}},
	{"providers.json auth block", `"auth": {"accessToken": "oauth-acc-123", "refreshToken": "oauth-ref-456", "expiresAt": 1790000000}`, "oauth-acc-123", []string{`"expiresAt": 1790000000`}},

	// env-style and config definitions
	{"env OPENAI_API_KEY", "OPENAI_API_KEY=sk-env-789 node app", "sk-env-789", []string{"OPENAI_API_KEY=", " node app"}},
	{"env API_KEY", "API_KEY=abc123xyz", "abc123xyz", []string{"API_KEY="}},
	{"env TOKEN", "TOKEN=t0k3nValue", "t0k3nValue", []string{"TOKEN="}},
	{"env GITHUB_TOKEN", "GITHUB_TOKEN=gh-plain-value-1", "gh-plain-value-1", []string{"GITHUB_TOKEN="}},
	{"env SECRET", "SECRET=mysecretvalue", "mysecretvalue", []string{"SECRET="}},
	{"env CLIENT_SECRET", "CLIENT_SECRET=cs_9a8b7c6d", "cs_9a8b7c6d", []string{"CLIENT_SECRET="}},
	{"env PASSWORD", "PASSWORD=hunter2hunter2 ./run", "hunter2hunter2", []string{"PASSWORD=", " ./run"}},
	{"env NVIDIA_KEY", "NVIDIA_KEY=nv-raw-12345", "nv-raw-12345", []string{"NVIDIA_KEY="}},
	{"env KEY", "KEY=rawkeyvalue1", "rawkeyvalue1", []string{"KEY="}},
	{"env DB_PASS", "DB_PASS=pgpass1234", "pgpass1234", []string{"DB_PASS="}},
	{"env AWS secret", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", []string{"AWS_SECRET_ACCESS_KEY="}},
	{"export quoted", `export ANTHROPIC_API_KEY="quoted value with spaces"`, "quoted value with spaces", []string{`export ANTHROPIC_API_KEY="`}},
	{"env inside json string", `{"env":["ANTHROPIC_API_KEY=ant-env-value-1","HOME=/root"]}`, "ant-env-value-1", []string{`"ANTHROPIC_API_KEY=`, `","HOME=/root"]`}},
	{"env escaped quotes in json", `"cmd":"PASSWORD=\"esc-pw-value\" make"`, "esc-pw-value", []string{`"cmd":"PASSWORD=\"`, `\" make"`}},
	{"docker -e", "docker run -e OPENAI_API_KEY=sk-docker-abc123 img", "sk-docker-abc123", []string{"docker run -e OPENAI_API_KEY=", " img"}},
	{"python spaced quoted", `TOKEN = "spaced-quoted-1"`, "spaced-quoted-1", []string{`TOKEN = "`}},
	{"flag with equals", "tool --password=flagpass99 --verbose", "flagpass99", []string{"tool --password=", " --verbose"}},
	{"query string token", "GET /cb?access_token=abcdef123456&page=2 HTTP/1.1", "abcdef123456", []string{"GET /cb?access_token=", "&page=2 HTTP/1.1"}},
	{"yaml password", "db:\n  password: hunter22\n  user: bob", "hunter22", []string{"  password: ", "\n  user: bob"}},
	{"yaml quoted api_key", `api_key: "yaml-quoted-val"`, "yaml-quoted-val", []string{`api_key: "`}},
	{"dotted config name", "spring.datasource.password=dsPass77", "dsPass77", []string{"spring.datasource.password="}},
	{"azure connection string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=bXlrZXk0NTY3OA==;EndpointSuffix=core", "bXlrZXk0NTY3OA==", []string{"AccountName=acct;AccountKey=", ";EndpointSuffix=core"}},

	// URLs
	{"postgres url password", "dial postgres://admin:pa55word@db:5432/app failed", "pa55word", []string{"dial postgres://admin:", "@db:5432/app failed"}},
	{"git https token", "fatal: https://x-access-token:gho-plain-999@github.com/o/r.git", "gho-plain-999", []string{"@github.com/o/r.git"}},

	// literals given to New
	{"literal verbatim", "echo custom literal value done", "custom literal value", []string{"echo ", " done"}},
	{"literal json escaped", `{"msg":"pw is pa\"ss\\word-77!"}`, `pa\"ss\\word-77`, []string{`{"msg":"pw is `, `!"}`}},
	{"literal twice", "lit-env-9f8e7d and lit-env-9f8e7d", "lit-env-9f8e7d", []string{" and "}},
}

var negativeCorpus = []string{
	"rate limit remaining: 99",
	"token usage: 1234 input, 56 output",
	"the key idea is simple",
	"password reset flow documentation",
	"/home/user/.config/cline/data/settings/providers.json",
	"12345 67890 3.14159",
	`{"inputTokens":12,"outputTokens":3,"cacheReadTokens":0,"totalCost":0}`,
	`{"tokenSource":"manual","updatedAt":"2026-01-01T00:00:00.000Z"}`,
	"CLINE_NO_AUTO_UPDATE=1",
	"TOKENIZERS_PARALLELISM=false",
	"KEYBOARD_LAYOUT=us",
	"SSH_AUTH_SOCK=/tmp/ssh-abc/agent.1",
	"max_tokens=4096",
	"use scikit-learn (sk-learn) for this",
	"a Bearer token is required",
	"Authorization: required for this endpoint",
	"The password: it must be 8 characters long",
	`{"toolName":"read_files","toolCallId":"call_1","iteration":2}`,
	"https://example.com:8080/path?page=2",
	"at 12:30:45 the monkey: banana",
	"if token == null || token != undefined {",
	"Error: Incorrect API key provided",
	"desk-top task-list risk-free",
	`{"type":"agent_event","event":{"type":"usage","inputTokens":100}}`,
	"expected key: value pairs",
	"-----BEGIN CERTIFICATE-----",
	"keyId=1234 tokenCount=55 TOKEN_PATH=/etc/token",
}

func TestRedactCorpus(t *testing.T) {
	r := New(corpusLiterals)
	if len(secretCorpus) < 50 {
		t.Fatalf("secret corpus has %d shapes, want at least 50", len(secretCorpus))
	}
	for _, tc := range secretCorpus {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(tc.in, tc.secret) {
				t.Fatalf("bad case: input %q does not contain secret %q", tc.in, tc.secret)
			}
			got := r.String(tc.in)
			if p := tc.secret[:4]; strings.Contains(got, p) {
				t.Errorf("got %q, still contains %q (a prefix of secret %q)", got, p, tc.secret)
			}
			if !strings.Contains(got, Marker) {
				t.Errorf("got %q, want a %s marker", got, Marker)
			}
			for _, k := range tc.keep {
				if !strings.Contains(got, k) {
					t.Errorf("got %q, want it to keep %q", got, k)
				}
			}
			if again := r.String(got); again != got {
				t.Errorf("String(String(x)) = %q, want %q", again, got)
			}
		})
	}
}

func TestRedactKeepsOrdinaryText(t *testing.T) {
	r := New(corpusLiterals)
	if len(negativeCorpus) < 15 {
		t.Fatalf("negative corpus has %d cases, want at least 15", len(negativeCorpus))
	}
	for _, in := range negativeCorpus {
		t.Run(in, func(t *testing.T) {
			if got := r.String(in); got != in {
				t.Errorf("got %q, want unchanged %q", got, in)
			}
		})
	}
}

func TestNewIgnoresShortAndBlankLiterals(t *testing.T) {
	r := New([]string{"a", "abc12", "      ", "\t\n", "", "REDACTED", "EDACTED]"})
	in := "a abc12 REDACTED and an [REDACTED] marker"
	if got := r.String(in); got != in {
		t.Errorf("got %q, want unchanged %q", got, in)
	}
}

func TestNilRedactorUsesPatterns(t *testing.T) {
	var r *Redactor
	if got, want := r.String("Authorization: Bearer sk-test-123"), "Authorization: Bearer [REDACTED]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	tail := r.NewTail(0)
	tail.Write([]byte("API_KEY=abcdef\npartial sk-te"))
	if got, want := tail.String(), "API_KEY=[REDACTED]\npartial [REDACTED]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
