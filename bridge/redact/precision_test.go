package redact

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// sourceCorpus is real source that ships with the toolchain and the module
// cache, written by others: the standard library's net/http and crypto
// packages and two modules this project depends on.
type sourceCorpus struct {
	roots []string
	files []corpusFile
	bytes int
	lines int
}

type corpusFile struct {
	path string
	data []byte
}

var (
	corpusOnce sync.Once
	corpus     sourceCorpus
	corpusErr  error
)

func loadSourceCorpus(tb testing.TB) *sourceCorpus {
	tb.Helper()
	corpusOnce.Do(func() { corpusErr = corpus.load() })
	if corpusErr != nil {
		tb.Fatalf("load the source corpus: %v", corpusErr)
	}
	return &corpus
}

func (c *sourceCorpus) load() error {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	goroot := strings.TrimSpace(string(out))
	c.roots = []string{filepath.Join(goroot, "src", "net", "http"), filepath.Join(goroot, "src", "crypto"),
		filepath.Join(goroot, "src", "syscall")}
	out, err = exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/mark3labs/mcp-go", "github.com/moby/moby/client", "golang.org/x/sys").Output()
	if err != nil {
		return fmt.Errorf("go list the corpus modules (run go mod download): %w", err)
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.Contains(filepath.ToSlash(d), "golang.org/x/sys") {
			d = filepath.Join(d, "unix")
		}
		c.roots = append(c.roots, d)
	}
	for _, root := range c.roots {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(filepath.Dir(root), p)
			c.files = append(c.files, corpusFile{path: filepath.ToSlash(rel), data: b})
			c.bytes += len(b)
			c.lines += bytes.Count(b, []byte("\n"))
			return nil
		})
		if err != nil {
			return err
		}
	}
	if c.bytes < 5<<20 {
		return fmt.Errorf("corpus has only %d bytes in %v", c.bytes, c.roots)
	}
	return nil
}

// changedLine is a line that Text changed.
type changedLine struct {
	file      string
	n         int
	from, to  string
	justified bool
}

// oracle decides, independently of the scanner, whether a changed line is
// a credential shape: a line inside a PEM private key block, or a line
// that holds a match of one of the shape rules' regexps (compiled on their
// own, with gitleaks' leading \b), a JWT, a "Bearer"/"Basic" credential, a
// URL with a password, or gitleaks' own generic-api-key rule (a secret
// keyword assigned a value of 3.5+ bits of entropy, see genericAPIKey).
// A name alone ("password =", "Secret:") is not in it: Text must never
// change a line for a name alone.
var oracle = func() []*regexp.Regexp {
	var res []*regexp.Regexp
	for _, r := range shapeRules {
		res = append(res, regexp.MustCompile(`(?:^|\W)(?:`+r.re+`)`))
	}
	for _, s := range []string{
		`\beyJ[A-Za-z0-9_-]{7,}\.eyJ[A-Za-z0-9_-]{10,}`,
		`(?i)\b(?:bearer|basic)[ \t]+[A-Za-z0-9._~+/=*-]{8,}`,
		`[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:[^\s/@]{3,}@[A-Za-z0-9\[]`,
	} {
		res = append(res, regexp.MustCompile(s))
	}
	return res
}()

// gitleaksGeneric is gitleaks' generic-api-key regexp, verbatim (MIT, see
// rules.go).
var gitleaksGeneric = regexp.MustCompile(`(?i)[\w.-]{0,50}?(?:access|auth|(?-i:[Aa]pi|API)|credential|creds|key|passw(?:or)?d|secret|token)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}([\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})(?:[\x60'"\s;]|\\[nr]|$)`)

var lettersOnly = regexp.MustCompile(`^[a-zA-Z_.-]+$`)

// goIdent is a Go identifier or selector expression (C.IFLA_INET6_TOKEN).
var goIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// genericAPIKey applies gitleaks' generic-api-key rule to a line: a match
// whose secret has 3.5 or more bits of entropy and is not letters only. In
// Go source an unquoted value of identifier syntax is by the language an
// identifier or a selector, never a credential: it does not count.
func genericAPIKey(line string) bool {
	for _, m := range gitleaksGeneric.FindAllStringSubmatchIndex(line, -1) {
		v := line[m[2]:m[3]]
		quoted := m[2] > 0 && strings.ContainsRune("\"'`", rune(line[m[2]-1]))
		if !quoted && goIdent.MatchString(v) {
			continue
		}
		if entropy([]byte(v)) >= 3.5 && !lettersOnly.MatchString(v) {
			return true
		}
	}
	return false
}

// textChanges runs the Precise scan over every corpus file and returns the
// lines its spans touch, each judged by the oracle.
func textChanges(c *sourceCorpus, r *Redactor) []changedLine {
	var out []changedLine
	for _, f := range c.files {
		sp, _ := r.scan(f.data, nil, Precise)
		if len(sp) == 0 {
			continue
		}
		lines := strings.Split(string(f.data), "\n")
		starts := make([]int, len(lines)) // byte offset of each line
		for i, off := 1, 0; i < len(lines); i++ {
			off += len(lines[i-1]) + 1
			starts[i] = off
		}
		lineOf := func(off int) int {
			n, _ := slices.BinarySearch(starts, off+1)
			return n - 1
		}
		touched := map[int]bool{}
		for _, x := range sp {
			for n := lineOf(x.s); n <= lineOf(x.e-1); n++ {
				touched[n] = true
			}
		}
		inPEM := false
		for i, line := range lines {
			if strings.Contains(line, "-----BEGIN") && strings.Contains(line, "PRIVATE KEY-----") {
				inPEM = true
			}
			if touched[i] {
				ok := inPEM || genericAPIKey(line)
				for _, re := range oracle {
					ok = ok || re.MatchString(line)
				}
				from := []byte(line)
				to := string(apply(nil, f.data, sp, starts[i], starts[i]+len(line), false))
				out = append(out, changedLine{file: f.path, n: i + 1, from: string(from), to: to, justified: ok})
			}
			if strings.Contains(line, "-----END") {
				inPEM = false
			}
		}
	}
	return out
}

// TestPrecisionSourceCorpus is the precision test: over ~10 MB of real Go
// source, Text changes no line that is not a credential shape, and keeps
// every line the old name-based redaction corrupted.
func TestPrecisionSourceCorpus(t *testing.T) {
	c := loadSourceCorpus(t)
	r := New(corpusLiterals)
	changes := textChanges(c, r)
	var wrong []changedLine
	for _, ch := range changes {
		if !ch.justified {
			wrong = append(wrong, ch)
		}
	}
	t.Logf("precision: Text changed %d of %d lines (%d files, %.1f MB) — %d credential shapes, %d other",
		len(changes), c.lines, len(c.files), float64(c.bytes)/1e6, len(changes)-len(wrong), len(wrong))
	for i, ch := range changes {
		if i == 8 {
			break
		}
		t.Logf("precision:   %s:%d  %s  ->  %s", ch.file, ch.n, clip(ch.from), clip(ch.to))
	}
	for _, ch := range wrong {
		t.Errorf("%s:%d is not a credential shape but Text changed it:\n  %s\n  %s", ch.file, ch.n, ch.from, ch.to)
	}
	// The Diagnostic level is name-based and does change ordinary code;
	// the corpus must show it, or it would prove nothing about Text.
	diag := 0
	for _, f := range c.files[:min(len(c.files), 300)] {
		if r.String(string(f.data)) != string(f.data) {
			diag++
		}
	}
	if diag == 0 {
		t.Errorf("String changed none of the first 300 corpus files; the corpus does not exercise the name-based rules")
	}
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// TestTextKeepsCode holds the lines an earlier redactor corrupted, and code like
// them: Text returns each byte for byte, while String (diagnostics) still
// redacts the name-based ones.
func TestTextKeepsCode(t *testing.T) {
	r := New(corpusLiterals)
	for _, tc := range []struct {
		in         string
		diagnostic bool // String redacts it
	}{
		{"\tSecret: cfg.Secret,", true},
		{`// "key=value" strings`, true},
		{"\treq.Header.Set(\"Authorization\", `Authorization: Bearer ${token}`)", true},
		{"password=form.value", true},
		{`const token = process.env.GITHUB_TOKEN;`, true},
		{`if password == "" { return errNoPassword }`, false},
		{`apiKey := os.Getenv("OPENAI_API_KEY")`, false},
		{`headers["Authorization"] = "Bearer " + accessToken`, false},
		{`dsn := fmt.Sprintf("postgres://%s:%s@%s/%s", user, password, host, db)`, true},
		{`url := "https://user:password@example.com/"`, true},
		{`curl -u "$USER:$PASSWORD" https://api.example.invalid`, false},
		{`-----BEGIN RSA PRIVATE KEY-----` + "\n...\n" + `-----END RSA PRIVATE KEY-----`, false},
		{`{"apiKey": "${OPENAI_API_KEY}", "token": "<your token>"}`, true},
		{`client_secret = settings.CLIENT_SECRET`, true},
		{`sk-learn and task-sk-list and s.mu.Lock() and SKIP_TESTS=1`, false},
		{"\t\tkey:  testEd25519PrivateKey,", true},
		{`	"encryptionKey": "encryptionKey1024",`, true},
		{`	PublicKey: "04ead218590119e8876b29146ff89ca61770c4edbbf97d38ce385ed281d8a6b2",`, false},
		{"// readUint16LengthPrefixed acts like s.ReadUint16LengthPrefixed, but targets a", false},
		{`req.Header.Set("Authorization", "Bearer " + accessToken2024)`, false},
		{"Authorization: Bearer accessTokenForTests1", true},
		// Identifiers and selectors: Go's and C's system call tables.
		{"\tIFLA_INET6_TOKEN = C.IFLA_INET6_TOKEN", true},
		{"\tNL80211_ATTR_KEY                                        = C.NL80211_ATTR_KEY", true},
		{"\tNL80211_ATTR_SAE_PASSWORD = unix.NL80211_ATTR_SAE_PASSWORD,", true},
		{`	"token": "IFLA_INET6_TOKEN",`, true},
		{"client_secret = settings.OAUTH2_CLIENT_SECRET", true},
		{"Authorization: Bearer C.IFLA_INET6_TOKEN", true},
	} {
		if got := r.Text(tc.in); got != tc.in {
			t.Errorf("Text(%q) = %q, want it unchanged", tc.in, got)
		}
		if got := r.String(tc.in); (got != tc.in) != tc.diagnostic {
			t.Errorf("String(%q) = %q, want changed=%v", tc.in, got, tc.diagnostic)
		}
	}
}
