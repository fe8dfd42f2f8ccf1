package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// authFixture is committed code full of password/token/Bearer identifiers, the kind the old
// name-based redaction corrupted in returned diffs.
const authFixture = `package auth

import (
	"fmt"
	"net/http"
	"os"
)

type Config struct {
	Secret   string
	Password string
	APIKey   string
	Token    string
}

func NewClient(cfg Config) *Client {
	return &Client{
		Secret:   cfg.Secret,
		password: cfg.Password,
		apiKey:   cfg.APIKey,
	}
}

func (c *Client) authorize(req *http.Request, token string) {
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Api-Key", c.apiKey)
}

// TODO: check the token
`

// authEdit replaces the TODO with more of the same.
const authEdit = `func login(form Form, user, host string) error {
	password := form.Value("password")
	query := "user=" + form.User + "&password=" + password
	header := ` + "`Authorization: Bearer ${token}`" + `
	secret := os.Getenv("CLIENT_SECRET")
	dsn := fmt.Sprintf("postgres://%s:%s@%s/app", user, password, host)
	cfg := map[string]string{"apiKey": apiKey, "token": token, "password": "<your password>"}
	// password=form.value, "key=value" strings, Secret: cfg.Secret,
	if token == "" || password == "" {
		return errMissingCredentials
	}
	url := "https://user:password@example.com/"
	return send(header, query, secret, dsn, cfg, url, "Bearer "+accessToken)
}
`

// deployScript is a new file the run creates.
const deployScript = `#!/bin/sh
export API_KEY="$API_KEY"
TOKEN=${GITHUB_TOKEN}
PASSWORD=$(cat /run/secrets/db_password)
curl -H "Authorization: Bearer $TOKEN" -u "$USER:$PASSWORD" https://api.example.invalid
mysql --password=$DB_PASSWORD --user=app
echo '{"apiKey":"'"$API_KEY"'","token":"'"$TOKEN"'"}'
`

// stagedDiff is git diff of everything in the work tree against HEAD, as a user would run it.
func stagedDiff(t *testing.T, repo string) string {
	t.Helper()
	for _, args := range [][]string{{"add", "-A"}, {"diff", "--cached", "--find-renames", "--no-color", "HEAD"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		if args[0] == "diff" {
			return string(out)
		}
	}
	return ""
}

func editPrompt(params url.Values) string {
	return "Edit the auth code fake:edit?" + params.Encode()
}

// TestApplyDiffOfCodeIsExact: apply_cline_edits over code that names passwords, tokens and
// Bearer headers returns a diff byte-identical to git diff — nothing in it is a secret — and
// the answer text keeps the code too. A real credential shape written by the run is redacted
// in the diff only: the file on disk keeps it.
func TestApplyDiffOfCodeIsExact(t *testing.T) {
	e := newEnv(t)
	repo := e.work
	gitInit(t, repo, map[string]string{"auth.go": authFixture})

	params := url.Values{}
	params.Set("path", "deploy.sh")
	params.Set("content", deployScript)
	params.Set("replace_path", "auth.go")
	params.Set("old", "// TODO: check the token\n")
	params.Set("new", authEdit)
	res, sc := e.call("apply_cline_edits", map[string]any{"prompt": editPrompt(params), "cwd": repo})
	mcpsession.WantOK(t, res, sc)
	got := mcpsession.Str(sc, "diff")
	want := stagedDiff(t, repo)
	if !strings.Contains(want, "Bearer ${token}") || !strings.Contains(want, "deploy.sh") {
		t.Fatalf("the run did not make the edits; git diff:\n%s", want)
	}
	if got != want {
		t.Errorf("returned diff differs from git diff.\nreturned:\n%s\ngit diff:\n%s", got, want)
	}
	if strings.Contains(got, "[REDACTED]") {
		t.Errorf("the diff of ordinary code was redacted:\n%s", got)
	}
	commitAll(t, repo)

	// A real token (a GitHub PAT shape) and a private key written by the run: redacted in the
	// diff, kept on disk.
	const pat = "ghp_R4nD0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsT"
	const keyLine = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
	params = url.Values{}
	params.Set("path", "key.pem")
	params.Set("content", "-----BEGIN PRIVATE KEY-----\n"+keyLine+"\n-----END PRIVATE KEY-----\n")
	params.Set("replace_path", "auth.go")
	params.Set("old", "\treturn send(")
	params.Set("new", "\tgh := github.NewClient(\""+pat+"\") // token for the password reset\n\treturn send(")
	res, sc = e.call("apply_cline_edits", map[string]any{"prompt": editPrompt(params), "cwd": repo})
	mcpsession.WantOK(t, res, sc)
	got = mcpsession.Str(sc, "diff")
	want = stagedDiff(t, repo)
	wantRedacted := strings.NewReplacer(pat, "[REDACTED]", keyLine, "[REDACTED]").Replace(want)
	if want == wantRedacted {
		t.Fatalf("the run did not write the token and key; git diff:\n%s", want)
	}
	if got != wantRedacted {
		t.Errorf("returned diff is not git diff with exactly the token and key line redacted.\nreturned:\n%s\nwant:\n%s", got, wantRedacted)
	}
	if b, err := os.ReadFile(filepath.Join(repo, "auth.go")); err != nil || !strings.Contains(string(b), pat) {
		t.Errorf("the file on disk lost the token (err %v)", err)
	}
	if b, err := os.ReadFile(filepath.Join(repo, "key.pem")); err != nil || !strings.Contains(string(b), keyLine) {
		t.Errorf("the key file on disk lost its key (err %v)", err)
	}
}

// TestAnswerQuotingCodeIsExact: the answer text of ask_cline keeps code that names secrets, and
// still loses a credential shape.
func TestAnswerQuotingCodeIsExact(t *testing.T) {
	e := newEnv(t)
	const code = "Use `req.Header.Set(\"Authorization\", \"Bearer \"+token)` and `password=form.value`; Secret: cfg.Secret, API_KEY=$API_KEY."
	const pat = "ghp_R4nD0mT0k3nV4lu3aBcDeFgHiJkLmNoPqRsT"
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Explain fake:pong?" + url.Values{"text": {code + " Your token " + pat + " leaked."}}.Encode()})
	mcpsession.WantOK(t, res, sc)
	if got, want := mcpsession.Str(sc, "text"), code+" Your token [REDACTED] leaked."; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

// commitAll commits everything so the next run's diff starts from a clean tree.
func commitAll(t *testing.T, repo string) {
	t.Helper()
	cmd := exec.Command("git", "commit", "-q", "-am", "first run")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, b)
	}
}

// TestKnownSecretsRedactedInAnswers: the values the server knows are redacted from the answer
// at every level — a Cline account token from providers.json also when printed without its
// "workos:" prefix, and a --docker-env variable whose name says nothing about secrets.
func TestKnownSecretsRedactedInAnswers(t *testing.T) {
	const account = "Wk9sEcReTaccount0123456789abcdefXYZ"
	const plain = "acme-plain-value-4711"
	e := newEnv(t)
	providers := strings.Replace(providersBefore, `"provider": "openai-compatible"`,
		`"provider": "openai-compatible", "auth": {"accessToken": "workos:`+account+`"}`, 1)
	if err := os.WriteFile(e.providers, []byte(providers), 0o600); err != nil {
		t.Fatal(err)
	}
	// A server of its own with the variable in its environment (newEnv's has none).
	e.startWithEnv([]string{"ACME_ACCESS=" + plain}, "--docker-env", "ACME_ACCESS")
	text := "account " + account + ", with prefix workos:" + account + ", acme " + plain + "."
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Tell fake:pong?" + url.Values{"text": {text}}.Encode()})
	mcpsession.WantOK(t, res, sc)
	if got, want := mcpsession.Str(sc, "text"), "account [REDACTED], with prefix [REDACTED], acme [REDACTED]."; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

// TestSecretFileNamesRedacted: apply_cline_edits through the built server, in a checkout where
// the run creates and renames files named after the API key in the server's environment: the key
// comes back nowhere — not in changedFiles[].path or oldPath, not in the text that lists them,
// not in the diff — while the files on disk keep their names.
func TestSecretFileNamesRedacted(t *testing.T) {
	const key = "acme-plain-key-0123456789xyz" // no credential shape: only the literal redacts it
	e := prepareEnv(t)
	e.startWithEnv([]string{"ACME_API_KEY=" + key})
	gitInit(t, e.work, map[string]string{"README.md": "hello\n", "old-" + key + ".txt": "x\n"})
	params := url.Values{"create": {"notes-" + key + ".txt"}, "rename": {"old-" + key + ".txt:moved-" + key + ".txt"}}
	res, sc := e.call("apply_cline_edits", map[string]any{"prompt": "Edit fake:edit_many?" + params.Encode(), "cwd": e.work})
	mcpsession.WantOK(t, res, sc)
	if _, err := os.Stat(filepath.Join(e.work, "notes-"+key+".txt")); err != nil {
		t.Fatalf("the run did not create the file named after the key: %v", err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), key) {
		t.Errorf("the key leaks from the result:\n%s", b)
	}
	files, _ := sc["changedFiles"].([]any)
	var paths []string
	for _, f := range files {
		m, _ := f.(map[string]any)
		paths = append(paths, fmt.Sprint(m["oldPath"]), fmt.Sprint(m["path"]))
	}
	joined := strings.Join(paths, " ")
	for _, want := range []string{"notes-[REDACTED].txt", "old-[REDACTED].txt", "moved-[REDACTED].txt"} {
		if !strings.Contains(joined, want) {
			t.Errorf("changedFiles %q lacks %q", joined, want)
		}
	}
	if text := mcpsession.Text(res); !strings.Contains(text, "notes-[REDACTED].txt") {
		t.Errorf("the text does not list the redacted name:\n%s", text)
	}
}

// TestRefreshedTokenRedactedInAnswer: a token the run refreshes — in the user's providers.json
// (a default host run) or in the private copy of a provider override (merged back) — and then
// prints comes back redacted, although the server learned it only during the call.
func TestRefreshedTokenRedactedInAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{name: "default run", args: map[string]any{}},
		{name: "override copy", args: map[string]any{"provider": "openai-native", "model": "gpt-override"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const token = "tok-refreshed-by-the-run-4711"
			e := newEnv(t)
			e.writeProviders(mcpsession.ProvidersTwo)
			args := map[string]any{"prompt": "Reply fake:token_refresh?" + url.Values{"token": {token}, "text": {"your new token is " + token + "."}}.Encode()}
			for k, v := range tc.args {
				args[k] = v
			}
			res, sc := e.call("ask_cline", args)
			mcpsession.WantOK(t, res, sc)
			if !strings.Contains(string(mustRead(t, e.providers)), token) {
				t.Fatalf("the run did not refresh the token into %s", e.providers)
			}
			if got, want := mcpsession.Str(sc, "text"), "your new token is [REDACTED]."; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
			if b, _ := json.Marshal(res); strings.Contains(string(b), token) {
				t.Errorf("the token leaks from the result:\n%s", b)
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
