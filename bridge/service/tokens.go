package service

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"sync"
)

// Limits are one tenant's limits. Zero MaxSpendUSDPerDay means no daily spend limit; zero MaxJobs
// means the tenant may not start background jobs.
type Limits struct {
	MaxConcurrent     int     `json:"maxConcurrent"`
	MaxQueued         int     `json:"maxQueued"`
	MaxJobs           int     `json:"maxJobs"`
	MaxSpendUSDPerDay float64 `json:"maxSpendUsdPerDay"`
}

// Tenant is one user of the service: its name, its limits, and the directory its calls' cwd must
// lie under ("" places no bound on cwd).
type Tenant struct {
	Name   string
	Root   string
	Limits Limits
	// GitReadToken is sent (as HTTP basic auth, user x-access-token) when the service fetches a
	// repository a call names by URL; "" fetches without a credential.
	GitReadToken Secret
}

// Secret is a credential: printed, logged or marshalled, it shows as "[redacted]".
type Secret string

func (Secret) String() string               { return "[redacted]" }
func (Secret) GoString() string             { return "[redacted]" }
func (Secret) LogValue() slog.Value         { return slog.StringValue("[redacted]") }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }
func (s Secret) reveal() string             { return string(s) }

// fileTenant is one entry of the token file.
type fileTenant struct {
	Name        string   `json:"name"`
	TokenSHA256 []string `json:"tokenSha256"`
	Root        string   `json:"root,omitempty"`
	// GitReadToken is the tenant's credential for the repositories its calls name by URL.
	GitReadToken string `json:"gitReadToken,omitempty"`
	Limits
}

// tokenFile is the token file: {"tenants": [...]}.
type tokenFile struct {
	Tenants []fileTenant `json:"tenants"`
}

// maxTokenFile bounds what is read of the token file.
const maxTokenFile = 1 << 20

var (
	tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	sha256Hex  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// entry is one accepted token hash and the tenant it names.
type entry struct {
	hash   [sha256.Size]byte
	tenant Tenant
}

// parseTokens reads a token file's content: every tenant valid, names and hashes unique.
func parseTokens(b []byte) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f tokenFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a token file: %w", err)
	}
	if dec.Decode(&struct{}{}) != io.EOF {
		return nil, errors.New("not a token file: text after the JSON object")
	}
	if len(f.Tenants) == 0 {
		return nil, errors.New("the token file names no tenant")
	}
	var out []entry
	names, hashes := map[string]bool{}, map[string]bool{}
	for i, t := range f.Tenants {
		if !tenantName.MatchString(t.Name) {
			return nil, fmt.Errorf("tenant %d: name %q must match %s", i+1, t.Name, tenantName)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("tenant %q is named twice", t.Name)
		}
		names[t.Name] = true
		if err := checkLimits(t.Limits); err != nil {
			return nil, fmt.Errorf("tenant %q: %w", t.Name, err)
		}
		if len(t.TokenSHA256) == 0 {
			return nil, fmt.Errorf("tenant %q: tokenSha256 lists no token hash", t.Name)
		}
		for _, h := range t.TokenSHA256 {
			if !sha256Hex.MatchString(h) {
				return nil, fmt.Errorf("tenant %q: a tokenSha256 entry is not 64 lowercase hex digits (the SHA-256 of the token, never the token itself)", t.Name)
			}
			if hashes[h] {
				return nil, fmt.Errorf("tenant %q: a token hash is listed twice", t.Name)
			}
			hashes[h] = true
			e := entry{tenant: Tenant{Name: t.Name, Root: t.Root, Limits: t.Limits, GitReadToken: Secret(t.GitReadToken)}}
			_, _ = hex.Decode(e.hash[:], []byte(h))
			out = append(out, e)
		}
	}
	return out, nil
}

func checkLimits(l Limits) error {
	switch {
	case l.MaxConcurrent < 1:
		return fmt.Errorf("maxConcurrent must be at least 1 (got %d)", l.MaxConcurrent)
	case l.MaxQueued < 0:
		return fmt.Errorf("maxQueued must not be negative (got %d)", l.MaxQueued)
	case l.MaxJobs < 0:
		return fmt.Errorf("maxJobs must not be negative (got %d)", l.MaxJobs)
	case !(l.MaxSpendUSDPerDay >= 0) || l.MaxSpendUSDPerDay > 1e9:
		return fmt.Errorf("maxSpendUsdPerDay must be between 0 (no limit) and 1e9 (got %v)", l.MaxSpendUSDPerDay)
	}
	return nil
}

// Tokens is the token file at Path, re-read whenever the file there changes (another file, or
// another size or modification time: an edit in place, a rename over it, or Kubernetes swapping
// a mounted Secret), so tokens rotate without a restart. A new file that does not parse leaves
// the last good one in force, and is logged once. Only hashes are kept. Safe for concurrent use.
type Tokens struct {
	path string
	log  *slog.Logger

	mu      sync.Mutex
	entries []entry
	seen    os.FileInfo // the file last read, good or bad
}

// LoadTokens reads the token file at path; an unreadable or invalid file is an error here (the
// service does not start without one good file).
func LoadTokens(path string, log *slog.Logger) (*Tokens, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tokens{path: path, log: log}
	fi, b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	entries, err := parseTokens(b)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	t.entries, t.seen = entries, fi
	return t, nil
}

func readFile(path string) (os.FileInfo, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("token file %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, nil, fmt.Errorf("token file: %w", err)
	}
	if len(b) > maxTokenFile {
		return nil, nil, fmt.Errorf("token file %s: larger than %d bytes", path, maxTokenFile)
	}
	return fi, b, nil
}

// changed reports whether fi names another file or another version than seen.
func changed(seen, fi os.FileInfo) bool {
	return seen == nil || !os.SameFile(seen, fi) || seen.Size() != fi.Size() || !seen.ModTime().Equal(fi.ModTime())
}

// refresh re-reads the file when it changed; t.mu is held.
func (t *Tokens) refreshLocked() {
	fi, err := os.Stat(t.path)
	if err != nil || !changed(t.seen, fi) {
		return
	}
	fi, b, err := readFile(t.path)
	if err == nil {
		var entries []entry
		if entries, err = parseTokens(b); err == nil {
			t.entries, t.seen = entries, fi
			t.log.Info("token file re-read", "path", t.path, "tokens", len(entries))
			return
		}
	}
	if fi != nil {
		t.seen = fi // logged once per version of the file
	}
	t.log.Error("token file changed but cannot be used; the tokens read before stay in force", "path", t.path, "err", err)
}

// Lookup returns the tenant that token names. Every hash is compared in constant time, all of
// them every time.
func (t *Tokens) Lookup(token string) (Tenant, bool) {
	sum := sha256.Sum256([]byte(token))
	t.mu.Lock()
	t.refreshLocked()
	entries := t.entries
	t.mu.Unlock()
	var found Tenant
	ok := 0
	for _, e := range entries {
		if subtle.ConstantTimeCompare(sum[:], e.hash[:]) == 1 {
			found, ok = e.tenant, 1
		}
	}
	return found, ok == 1 && token != ""
}

// Tenants lists the tenants of the file in force (each once), re-reading it when it changed.
func (t *Tokens) Tenants() []Tenant {
	t.mu.Lock()
	t.refreshLocked()
	entries := t.entries
	t.mu.Unlock()
	var out []Tenant
	seen := map[string]bool{}
	for _, e := range entries {
		if !seen[e.tenant.Name] {
			seen[e.tenant.Name] = true
			out = append(out, e.tenant)
		}
	}
	return out
}

// Hash is the token file's tokenSha256 value for token.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
