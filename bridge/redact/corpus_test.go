package redact

import (
	"strings"
	"testing"
)

// secretCase is one secret shape: in contains secret, which must vanish
// (no prefix of 4 or more bytes may survive) while keep stays, in every
// output of level and above: a Precise case (a credential shape or a known
// literal) in answers, diffs, progress and diagnostics; a Diagnostic case
// (found by a name, or a shape too loose for content) in tails, messages
// and logs.
type secretCase struct {
	name   string
	in     string
	secret string
	keep   []string
	level  Level
}

// corpusLiterals stand for the values a Runner knows: providers.json
// (including an account token with a "workos:" prefix), the server's
// environment and --docker-env.
var corpusLiterals = []string{"custom literal value", `pa"ss\word-77`, "lit-env-9f8e7d", "workos:Wk9sEcReT-value-0123456789abcdef", "Bearer dckr-env-Secret-42"}

var secretCorpus = []secretCase{
	// self-identifying tokens
	{"openai sk", "error: invalid key sk-abcdef1234567890abcdef1234567890 provided", "sk-abcdef1234567890abcdef1234567890", []string{"error: invalid key ", " provided"}, Precise},
	{"openai sk-proj", "key=sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678", "sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678", []string{"key="}, Precise},
	{"anthropic sk-ant", `x-api-key header was sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEf_GhIj-AAAA.`, "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEf_GhIj-AAAA", []string{"x-api-key header was ", "."}, Precise},
	{"masked sk from cline 401", "Incorrect API key provided: sk-test-***123. You can find your API key at https://example.invalid/api-keys.", "sk-test-***123", []string{"Incorrect API key provided: ", ". You can find your API key at https://example.invalid/api-keys."}, Diagnostic},
	{"sk in argv", "cline auth --provider openai-compatible --apikey sk-test-123 --modelid fake-model", "sk-test-123", []string{"--apikey ", " --modelid fake-model"}, Diagnostic},
	{"sk-other in -k", "cline --json -k sk-other-456 -c /repo", "sk-other-456", []string{"-k ", " -c /repo"}, Diagnostic},
	{"nvidia nvapi", "using nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcd for NIM", "nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcd", []string{"using ", " for NIM"}, Precise},
	{"github ghp", "remote: ghp_16C7e42F292c6912E7710c838347Ae178B4a rejected", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", []string{"remote: ", " rejected"}, Precise},
	{"github gho", "oauth gho_abcdefghijklmnopqrstuvwxyz0123456789", "gho_abcdefghijklmnopqrstuvwxyz0123456789", []string{"oauth "}, Precise},
	{"github fine-grained pat", "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV ok", "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV", []string{" ok"}, Diagnostic},
	{"gitlab glpat", "glpat-xXyYzZ0123456789abcd used", "glpat-xXyYzZ0123456789abcd", []string{" used"}, Precise},
	{"slack bot", "slack xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp done", "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", []string{"slack ", " done"}, Precise},
	{"slack user", "xoxp-1111111111-2222222222-abcdefabcdef", "xoxp-1111111111-2222222222-abcdefabcdef", nil, Diagnostic},
	{"aws access key id", "aws_access_key_id AKIAIOSFODNN7EXAMPLE region", "AKIAIOSFODNN7EXAMPLE", []string{"aws_access_key_id ", " region"}, Precise},
	{"aws session key id", "(ASIAY34FZKBOKMUTVV7A)", "ASIAY34FZKBOKMUTVV7A", []string{"(", ")"}, Precise},
	{"google api key", "url ?key=AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe&x", "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", []string{"url ?key=", "&x"}, Precise},
	{"google oauth ya29", "token ya29.a0AfH6SMBx3kL9mNpQrStUvWxYz0123456789 end", "ya29.a0AfH6SMBx3kL9mNpQrStUvWxYz0123456789", []string{" end"}, Precise},
	{"jwt", "cookie eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c;", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c", []string{"cookie ", ";"}, Precise},
	{"hugging face", "HF hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567 set", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", []string{" set"}, Precise},
	{"stripe live", "sk_live_4eC39HqLyjWDarjtT1zdp7dc charged", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", []string{" charged"}, Precise},
	{"groq", "gsk_abcdefghijklmnopqrstuvwxyz0123 x", "gsk_abcdefghijklmnopqrstuvwxyz0123", nil, Precise},
	{"xai", "xai-AbCdEfGhIjKlMnOpQrStUv0123 x", "xai-AbCdEfGhIjKlMnOpQrStUv0123", nil, Precise},
	{"npm", "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz0123456789", []string{"//registry.npmjs.org/:_authToken="}, Precise},
	{"pem private key", `{"out":"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM\n-----END RSA PRIVATE KEY-----\n"}`, `MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM`, []string{"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"}, Diagnostic},

	// Bearer and headers
	{"bearer header", "Authorization: Bearer sk-test-123", "sk-test-123", []string{"Authorization: Bearer "}, Diagnostic},
	{"bearer opaque token", `curl -H "Authorization: Bearer abc123.def456-ghi" https://x`, "abc123.def456-ghi", []string{`curl -H "Authorization: Bearer `, `" https://x`}, Precise},
	{"bearer lowercase", "sent bearer 9f8e7d6c5b4a3210 upstream", "9f8e7d6c5b4a3210", []string{"sent bearer ", " upstream"}, Precise},
	{"basic auth header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", []string{"Authorization: Basic "}, Precise},
	{"proxy authorization", "Proxy-Authorization: Basic Zm9vOmJhcjEyMw==", "Zm9vOmJhcjEyMw==", []string{"Proxy-Authorization: Basic "}, Precise},
	{"x-api-key header", "X-Api-Key: 0123abcd4567efgh", "0123abcd4567efgh", []string{"X-Api-Key: "}, Diagnostic},
	{"github token scheme", "Authorization: token 5f4dcc3b5aa765d61d8327deb882cf99", "5f4dcc3b5aa765d61d8327deb882cf99", []string{"Authorization: token "}, Diagnostic},

	// JSON keys (keep the key, redact the string value)
	{"json apiKey", `{"apiKey":"super-secret-value-1","model":"m"}`, "super-secret-value-1", []string{`{"apiKey":"`, `","model":"m"}`}, Diagnostic},
	{"json api_key spaced", `{"api_key": "plainvalue99"}`, "plainvalue99", []string{`{"api_key": "`, `"}`}, Diagnostic},
	{"json accessToken", `{"accessToken":"acc3ss-t0ken-val"}`, "acc3ss-t0ken-val", []string{`"accessToken":"`}, Diagnostic},
	{"json refreshToken", `{"refreshToken":"r3fr3sh-val-abc"}`, "r3fr3sh-val-abc", []string{`"refreshToken":"`}, Diagnostic},
	{"json token", `{"token":"opaque-tok-value"}`, "opaque-tok-value", []string{`"token":"`}, Diagnostic},
	{"json secret", `{"secret":"shh-its-a-secret"}`, "shh-its-a-secret", []string{`"secret":"`}, Diagnostic},
	{"json password", `{"user":"bob","password":"correcthorsebattery"}`, "correcthorsebattery", []string{`"user":"bob"`, `"password":"`}, Diagnostic},
	{"json key", `{"key": "AbC-dEf-123"}`, "AbC-dEf-123", []string{`"key": "`}, Diagnostic},
	{"json authorization keeps scheme", `{"headers":{"Authorization":"Bearer opaque-jwt-like-value"}}`, "opaque-jwt-like-value", []string{`"Authorization":"Bearer `}, Diagnostic},
	{"json authorization basic", `{"authorization": "Basic dXNlcjpwYXNz"}`, "dXNlcjpwYXNz", []string{`"authorization": "Basic `}, Precise},
	{"json escaped inside string", `{"text":"{\"apiKey\":\"zq-secret-777\",\"x\":1}"}`, "zq-secret-777", []string{`{"text":"{\"apiKey\":\"`, `\",\"x\":1}"}`}, Diagnostic},
	{"json double escaped", `"\\\"password\\\":\\\"dbl-esc-999\\\""`, "dbl-esc-999", []string{`\\\"password\\\":\\\"`}, Diagnostic},
	{"json upper-case key", `{"APIKEY":"Upper-Case-42"}`, "Upper-Case-42", []string{`"APIKEY":"`}, Diagnostic},
	{"json clientSecret", `{"clientSecret":"cl1ent-s3cret"}`, "cl1ent-s3cret", []string{`"clientSecret":"`}, Diagnostic},
	{"json sessionToken", `{"sessionToken":"FwoGZXIvYXdzEBYaD"}`, "FwoGZXIvYXdzEBYaD", []string{`"sessionToken":"`}, Diagnostic},
	{"json privateKey", `{"privateKey":"MIIBVgIBADANBgkq"}`, "MIIBVgIBADANBgkq", []string{`"privateKey":"`}, Diagnostic},
	{"json credentials", `{"credentials":"c-r-e-d-value-123"}`, "c-r-e-d-value-123", []string{`"credentials":"`}, Diagnostic},
	{"json value with escaped quote", `{"password":"ab\"cd-efgh","n":1}`, `ab\"cd-efgh`, []string{`"password":"`, `","n":1}`}, Diagnostic},
	{"js object single quotes", `const cfg = {apiKey: 'js-object-val-5'};`, "js-object-val-5", []string{"const cfg = {apiKey: '", "'};"}, Diagnostic},
	{"providers.json auth block", `"auth": {"accessToken": "oauth-acc-123", "refreshToken": "oauth-ref-456", "expiresAt": 1790000000}`, "oauth-acc-123", []string{`"expiresAt": 1790000000`}, Diagnostic},

	// env-style and config definitions
	{"env OPENAI_API_KEY", "OPENAI_API_KEY=sk-env-789 node app", "sk-env-789", []string{"OPENAI_API_KEY=", " node app"}, Diagnostic},
	{"env API_KEY", "API_KEY=abc123xyz", "abc123xyz", []string{"API_KEY="}, Diagnostic},
	{"env TOKEN", "TOKEN=t0k3nValue", "t0k3nValue", []string{"TOKEN="}, Diagnostic},
	{"env GITHUB_TOKEN", "GITHUB_TOKEN=gh-plain-value-1", "gh-plain-value-1", []string{"GITHUB_TOKEN="}, Diagnostic},
	{"env SECRET", "SECRET=mysecretvalue", "mysecretvalue", []string{"SECRET="}, Diagnostic},
	{"env CLIENT_SECRET", "CLIENT_SECRET=cs_9a8b7c6d", "cs_9a8b7c6d", []string{"CLIENT_SECRET="}, Diagnostic},
	{"env PASSWORD", "PASSWORD=hunter2hunter2 ./run", "hunter2hunter2", []string{"PASSWORD=", " ./run"}, Diagnostic},
	{"env NVIDIA_KEY", "NVIDIA_KEY=nv-raw-12345", "nv-raw-12345", []string{"NVIDIA_KEY="}, Diagnostic},
	{"env KEY", "KEY=rawkeyvalue1", "rawkeyvalue1", []string{"KEY="}, Diagnostic},
	{"env DB_PASS", "DB_PASS=pgpass1234", "pgpass1234", []string{"DB_PASS="}, Diagnostic},
	{"env AWS secret", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", []string{"AWS_SECRET_ACCESS_KEY="}, Diagnostic},
	{"export quoted", `export ANTHROPIC_API_KEY="quoted value with spaces"`, "quoted value with spaces", []string{`export ANTHROPIC_API_KEY="`}, Diagnostic},
	{"env inside json string", `{"env":["ANTHROPIC_API_KEY=ant-env-value-1","HOME=/root"]}`, "ant-env-value-1", []string{`"ANTHROPIC_API_KEY=`, `","HOME=/root"]`}, Diagnostic},
	{"env escaped quotes in json", `"cmd":"PASSWORD=\"esc-pw-value\" make"`, "esc-pw-value", []string{`"cmd":"PASSWORD=\"`, `\" make"`}, Diagnostic},
	{"docker -e", "docker run -e OPENAI_API_KEY=sk-docker-abc123 img", "sk-docker-abc123", []string{"docker run -e OPENAI_API_KEY=", " img"}, Diagnostic},
	{"python spaced quoted", `TOKEN = "spaced-quoted-1"`, "spaced-quoted-1", []string{`TOKEN = "`}, Diagnostic},
	{"flag with equals", "tool --password=flagpass99 --verbose", "flagpass99", []string{"tool --password=", " --verbose"}, Diagnostic},
	{"query string token", "GET /cb?access_token=abcdef123456&page=2 HTTP/1.1", "abcdef123456", []string{"GET /cb?access_token=", "&page=2 HTTP/1.1"}, Diagnostic},
	{"yaml password", "db:\n  password: hunter22\n  user: bob", "hunter22", []string{"  password: ", "\n  user: bob"}, Diagnostic},
	{"yaml quoted api_key", `api_key: "yaml-quoted-val"`, "yaml-quoted-val", []string{`api_key: "`}, Diagnostic},
	{"dotted config name", "spring.datasource.password=dsPass77", "dsPass77", []string{"spring.datasource.password="}, Diagnostic},
	{"azure connection string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=bXlrZXk0NTY3OA==;EndpointSuffix=core", "bXlrZXk0NTY3OA==", []string{"AccountName=acct;AccountKey=", ";EndpointSuffix=core"}, Diagnostic},

	// URLs
	{"postgres url password", "dial postgres://admin:pa55word@db:5432/app failed", "pa55word", []string{"dial postgres://admin:", "@db:5432/app failed"}, Precise},
	{"git https token", "fatal: https://x-access-token:gho-plain-999@github.com/o/r.git", "gho-plain-999", []string{"@github.com/o/r.git"}, Precise},

	// literals given to New
	{"literal verbatim", "echo custom literal value done", "custom literal value", []string{"echo ", " done"}, Precise},
	{"literal json escaped", `{"msg":"pw is pa\"ss\\word-77!"}`, `pa\"ss\\word-77`, []string{`{"msg":"pw is `, `!"}`}, Precise},
	{"literal twice", "lit-env-9f8e7d and lit-env-9f8e7d", "lit-env-9f8e7d", []string{" and "}, Precise},
	{"literal secret part without its workos: prefix", "token Wk9sEcReT-value-0123456789abcdef expired", "Wk9sEcReT-value-0123456789abcdef", []string{"token ", " expired"}, Precise},
	{"literal with prefix", `"accessToken":"workos:Wk9sEcReT-value-0123456789abcdef"`, "workos:Wk9sEcReT-value-0123456789abcdef", []string{`"accessToken":"`}, Precise},
	{"literal secret part without its Bearer scheme", "key dckr-env-Secret-42 in use", "dckr-env-Secret-42", []string{"key ", " in use"}, Precise},

	// Shapes as they appear in code an answer quotes or a diff adds.
	{"github fine-grained pat 82", `token := "github_pat_11ABCDEFG0aBcDeFgHiJkLmN_oPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012345678"`, "github_pat_11ABCDEFG0aBcDeFgHiJkLmN_oPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012345678", []string{`token := "`, `"`}, Precise},
	{"pem private key block", "+-----BEGIN PRIVATE KEY-----\n+MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n+MgsbdLXqVb8sPzpfbZ6pPfpyfjJ7eG5h1u9dEg8pLJnpJNP3xT4AfLkuMeIskd2\n+-----END PRIVATE KEY-----\n", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj", []string{"-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"}, Precise},
	{"openai project key (gitleaks example)", `OPENAI_API_KEY="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"`, "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", []string{`OPENAI_API_KEY="`}, Precise},
	{"openai service account key (gitleaks example)", "key: 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", "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", []string{"key: "}, Precise},
	{"openai admin key (gitleaks example)", "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.", "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", []string{"."}, Precise},
	{"anthropic api03 key", "ANTHROPIC_API_KEY=sk-ant-api03-aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7sU9wY1aC3eG5iK7mO9qS1uW3yA5cE7gI9kM1oQ3sU5wY7aC9eG1iK3mO5qS7uW9yA1cE3gI5kM7AA", "sk-ant-api03-aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7sU9wY1aC3eG5iK7mO9qS1uW3yA5cE7gI9kM1oQ3sU5wY7aC9eG1iK3mO5qS7uW9yA1cE3gI5kM7AA", []string{"ANTHROPIC_API_KEY="}, Precise},
	{"openrouter key", `apiKey: "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"`, "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", []string{`apiKey: "`}, Precise},
	{"deepseek key", "export DEEPSEEK_API_KEY=sk-4f3c2b1a09e8d7c6b5a4f3e2d1c0b9a8", "sk-4f3c2b1a09e8d7c6b5a4f3e2d1c0b9a8", []string{"export DEEPSEEK_API_KEY="}, Precise},
	{"token in a diff line", "+\tclient := github.NewClient(\"ghp_R4nD0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsT\")", "ghp_R4nD0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsT", []string{"+\tclient := github.NewClient(\""}, Precise},
	{"jwt in a query string", "GET /cb?id_token=eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2V4YW1wbGUifQ.c2lnbmF0dXJlLXZhbHVlLTEyMzQ1Ng&state=1", "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2V4YW1wbGUifQ.c2lnbmF0dXJlLXZhbHVlLTEyMzQ1Ng", []string{"&state=1"}, Precise},
	{"url password in code", `db, err := sql.Open("postgres", "postgres://app:Xk29fLq0zP@db.internal:5432/app")`, "Xk29fLq0zP", []string{`"postgres://app:`, `@db.internal:5432/app")`}, Precise},
	{"bearer generated in a curl line", "curl -H 'Authorization: Bearer 7f3a9c2e1b4d6f8a0c2e4b6d8f0a2c4e' https://api.example.invalid", "7f3a9c2e1b4d6f8a0c2e4b6d8f0a2c4e", []string{"Authorization: Bearer ", "' https://api.example.invalid"}, Precise},
	{"env value that looks generated", "OPENAI_API_KEY=7Fq2x9Wv4k1Zp0aBcDeF3", "7Fq2x9Wv4k1Zp0aBcDeF3", []string{"OPENAI_API_KEY="}, Precise},
	{"json value that looks generated", `{"apiKey":"LIVE7q2x9Wv4k1Zp0aBcDeFgSECRET"}`, "LIVE7q2x9Wv4k1Zp0aBcDeFgSECRET", []string{`{"apiKey":"`, `"}`}, Precise},
	{"yaml hex value", "  api_key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0\n", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", []string{"  api_key: "}, Precise},
	{"go secret literal", `const clientSecret = "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1"`, "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1", []string{`const clientSecret = "`}, Precise},
	{"aws key id in prose", "The key AKIA2OGYBAH6STMMNXNN was rotated.", "AKIA2OGYBAH6STMMNXNN", []string{"The key ", " was rotated."}, Precise},
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

// TestRedactCorpus is the recall test: every case vanishes from every
// output of its level — Text (Precise cases), String and a Tail fed the
// input in two writes split at every byte and cut to every length.
func TestRedactCorpus(t *testing.T) {
	r := New(corpusLiterals)
	if len(secretCorpus) < 90 {
		t.Fatalf("secret corpus has %d shapes, want at least 90", len(secretCorpus))
	}
	precise := 0
	for _, tc := range secretCorpus {
		if tc.level == Precise {
			precise++
		}
	}
	t.Logf("recall: %d corpus cases (%d credential shapes and literals: Text, String, Tail; %d name-based: String, Tail), each Tail split at every byte and cut to every length",
		len(secretCorpus), precise, len(secretCorpus)-precise)
	for _, tc := range secretCorpus {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(tc.in, tc.secret) {
				t.Fatalf("bad case: input %q does not contain secret %q", tc.in, tc.secret)
			}
			outputs := map[string]func(string) string{"String": r.String}
			if tc.level == Precise {
				outputs["Text"] = r.Text
			}
			for name, redact := range outputs {
				got := redact(tc.in)
				if leak := leaked(tc.in, tc.secret, got); leak != "" {
					t.Errorf("%s: got %q, still contains %q of secret %q", name, got, leak, tc.secret)
				}
				if !strings.Contains(got, Marker) {
					t.Errorf("%s: got %q, want a %s marker", name, got, Marker)
				}
				for _, k := range tc.keep {
					if !strings.Contains(got, k) {
						t.Errorf("%s: got %q, want it to keep %q", name, got, k)
					}
				}
				if again := redact(got); again != got {
					t.Errorf("%s(%s(x)) = %q, want %q", name, name, again, got)
				}
			}
			for split := 0; split <= len(tc.in); split++ {
				tail := r.NewTail(0)
				tail.Write([]byte(tc.in[:split]))
				if mid := tail.String(); strings.Contains(mid, tc.secret) {
					t.Fatalf("tail after writing %d bytes: %q shows the whole secret", split, mid)
				}
				tail.Write([]byte(tc.in[split:]))
				tail.Flush()
				full := tail.String()
				if leak := leaked(tc.in, tc.secret, full); leak != "" {
					t.Fatalf("tail split at %d: got %q, still contains %q", split, full, leak)
				}
				if split == len(tc.in)/2 {
					for n := 1; n < len(full); n++ {
						cut := r.NewTail(n)
						writeInPieces(t, cut, []byte(tc.in), 3)
						cut.Flush()
						if got := cut.String(); got != lastRunesString(full, n) {
							t.Fatalf("tail of %d runes = %q, want the last %d runes of %q", n, got, n, full)
						}
					}
				}
			}
		})
	}
}

// leaked returns a piece of secret (its first 4 bytes, or any 6 bytes of
// it that occur nowhere else in the input) that survived in got, or "".
func leaked(in, secret, got string) string {
	if strings.Contains(got, secret[:4]) && !strings.Contains(strings.ReplaceAll(in, secret, ""), secret[:4]) {
		return secret[:4]
	}
	rest := strings.ReplaceAll(in, secret, "\x00")
	for k := 0; k+6 <= len(secret); k++ {
		w := secret[k : k+6]
		if strings.Contains(got, w) && !strings.Contains(rest, w) && !strings.Contains(Marker, w) {
			return w
		}
	}
	return ""
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

// TestManyLiteralsEveryAlignment covers the sampled search used from 8
// literals on: every literal, at every offset from the start, at the very
// end, and overlapping another, is found.
func TestManyLiteralsEveryAlignment(t *testing.T) {
	lits := append(manyLiteralsT(50), "abcdef", "xyz123456")
	r := New(lits)
	for _, lit := range lits {
		for pad := range 9 {
			for _, in := range []string{strings.Repeat(".", pad) + lit, strings.Repeat(".", pad) + lit + " tail", "a" + lit[:3] + lit} {
				if got := r.Text(in); strings.Contains(got, lit) {
					t.Fatalf("Text(%q) = %q, still contains literal %q", in, got, lit)
				}
			}
		}
	}
}
