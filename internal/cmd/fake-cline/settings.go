package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// paths are the files the real CLI would use for this invocation (docs/cline-cli.md "providers.json").
type paths struct {
	workDir   string // -c resolved against the process cwd (the process cwd without -c)
	dataDir   string
	providers string
	global    string
}

// homeFallback is used when HOME is unset or empty (the FROM scratch image has no HOME). The
// real CLI would ask the OS for the home directory; the fake picks /tmp so it still works.
const homeFallback = "/tmp"

// resolvePaths mirrors the real resolution: --data-dir D (relative to -c; overrides
// CLINE_PROVIDER_SETTINGS_PATH) → $CLINE_PROVIDER_SETTINGS_PATH → $CLINE_DATA_DIR →
// <--config|$CLINE_DIR|$HOME/.cline>/data, with global-settings.json beside providers.json.
func resolvePaths(c *config, getenv func(string) string, procCwd string) paths {
	var p paths
	p.workDir = procCwd
	if c.cwd != "" {
		p.workDir = absFrom(procCwd, c.cwd)
	}
	switch {
	case c.dataDir != "":
		p.dataDir = absFrom(p.workDir, c.dataDir)
		p.providers = filepath.Join(p.dataDir, "settings", "providers.json")
	default:
		if getenv("CLINE_SANDBOX") == "1" {
			p.dataDir = getenv("CLINE_SANDBOX_DATA_DIR")
			if p.dataDir == "" {
				tmp := getenv("TMPDIR")
				if tmp == "" {
					tmp = "/tmp"
				}
				p.dataDir = filepath.Join(tmp, "cline-sandbox")
			}
		} else if d := getenv("CLINE_DATA_DIR"); d != "" {
			p.dataDir = absFrom(procCwd, d)
		} else {
			clineDir := getenv("CLINE_DIR")
			if c.configDir != "" {
				clineDir = absFrom(procCwd, c.configDir)
			}
			if clineDir == "" {
				home := getenv("HOME")
				if home == "" {
					home = homeFallback
				}
				clineDir = filepath.Join(home, ".cline")
			}
			p.dataDir = filepath.Join(clineDir, "data")
		}
		p.providers = getenv("CLINE_PROVIDER_SETTINGS_PATH")
		if p.providers == "" {
			p.providers = filepath.Join(p.dataDir, "settings", "providers.json")
		}
	}
	p.global = getenv("CLINE_GLOBAL_SETTINGS_PATH")
	if p.global == "" {
		p.global = filepath.Join(p.dataDir, "settings", "global-settings.json")
	}
	return p
}

func absFrom(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

// settingsKeys is the ProviderSettings zod shape in declaration order. zod outputs known keys in
// this order and drops unknown ones, which is why every rewritten entry starts with "provider".
var settingsKeys = []string{
	"provider", "apiKey", "model", "baseUrl", "reasoning", "headers", "timeout", "maxTokens",
	"contextWindow", "protocol", "client", "routingProviderId", "auth", "aws", "gcp", "azure", "sap",
	"oca", "region", "apiLine", "capabilities", "modelCatalog",
}

var authKeys = []string{
	"apiKey", "accessToken", "refreshToken", "expiresAt", "accountId", "organizationId",
	"organizationName", "memberId", "metadata",
}

var providerIDRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// providerEntry is one providers[<id>] block; settings values are kept as raw JSON.
type providerEntry struct {
	id        string
	settings  map[string]json.RawMessage
	updatedAt json.RawMessage
	token     json.RawMessage
}

// providersFile is the parsed providers.json; a nil *providersFile means "empty" (missing,
// unparseable or schema-invalid — the real CLI then starts from scratch).
type providersFile struct {
	lastUsed string
	modes    json.RawMessage
	entries  []*providerEntry
}

// readProviders parses path like the CLI's read(): any schema failure yields an empty file.
func readProviders(path string) *providersFile {
	data, err := os.ReadFile(path)
	if err != nil {
		return &providersFile{}
	}
	var top struct {
		LastUsedProvider string          `json:"lastUsedProvider"`
		Modes            json.RawMessage `json:"modes"`
		Providers        json.RawMessage `json:"providers"`
	}
	if json.Unmarshal(data, &top) != nil {
		return &providersFile{}
	}
	f := &providersFile{lastUsed: top.LastUsedProvider, modes: top.Modes}
	if len(top.Providers) == 0 || string(top.Providers) == "null" {
		return f
	}
	ids, err := objectKeys(top.Providers)
	if err != nil {
		return &providersFile{}
	}
	var provs map[string]struct {
		Settings    map[string]json.RawMessage `json:"settings"`
		UpdatedAt   json.RawMessage            `json:"updatedAt"`
		TokenSource json.RawMessage            `json:"tokenSource"`
	}
	if json.Unmarshal(top.Providers, &provs) != nil {
		return &providersFile{}
	}
	for _, id := range ids {
		p := provs[id]
		if !validSettings(p.Settings) {
			return &providersFile{}
		}
		f.entries = append(f.entries, &providerEntry{id: id, settings: p.Settings, updatedAt: p.UpdatedAt, token: p.TokenSource})
	}
	return f
}

func validSettings(s map[string]json.RawMessage) bool {
	if s == nil {
		return false
	}
	var prov string
	if json.Unmarshal(s["provider"], &prov) != nil || !providerIDRe.MatchString(prov) {
		return false
	}
	for _, k := range []string{"apiKey", "model"} {
		if raw, ok := s[k]; ok {
			var str string
			if json.Unmarshal(raw, &str) != nil {
				return false
			}
		}
	}
	if raw, ok := s["baseUrl"]; ok {
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return false
		}
		u, err := url.Parse(str)
		if err != nil || u.Scheme == "" {
			return false
		}
	}
	return true
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func (f *providersFile) entry(id string) *providerEntry {
	for _, e := range f.entries {
		if e.id == id {
			return e
		}
	}
	return nil
}

func (e *providerEntry) str(key string) string {
	var s string
	_ = json.Unmarshal(e.settings[key], &s)
	return s
}

// defaultModel is used when neither -m nor a saved model exists. `cline` → aion-labs/aion-3.5 was
// observed (o_no_providers_json); for other providers the real CLI takes the first model of its
// bundled catalog, which the fake does not have, so it uses the CLI's last-resort default.
func defaultModel(provider string) string {
	if provider == "cline" {
		return "aion-labs/aion-3.5"
	}
	return "anthropic/claude-sonnet-4.6"
}

// resolveRun applies the per-run resolution: provider = -P → lastUsedProvider → "cline"; model =
// -m → saved → default. It updates f in place the way saveProviderSettings does.
func (f *providersFile) resolveRun(c *config, now time.Time) (provider, model string) {
	provider = c.provider
	if provider == "" {
		provider = f.lastUsed
	}
	if provider == "" {
		provider = "cline"
	}
	e := f.entry(provider)
	if e == nil {
		e = &providerEntry{id: provider, settings: map[string]json.RawMessage{}, token: json.RawMessage(`"manual"`)}
		f.entries = append(f.entries, e)
	}
	model = c.model
	if model == "" {
		model = e.str("model")
	}
	if model == "" {
		model = defaultModel(provider)
	}
	e.settings["provider"] = mustJSON(provider)
	e.settings["model"] = mustJSON(model)
	if c.key != "" {
		e.settings["apiKey"] = mustJSON(c.key)
	}
	e.updatedAt = mustJSON(isoTime(now))
	f.lastUsed = provider
	return provider, model
}

// setAccessToken sets providers[id].settings.auth.accessToken (token_refresh scenario).
func (f *providersFile) setAccessToken(id, token string) {
	e := f.entry(id)
	if e == nil {
		return
	}
	auth := map[string]json.RawMessage{}
	_ = json.Unmarshal(e.settings["auth"], &auth)
	auth["accessToken"] = mustJSON(token)
	e.settings["auth"] = orderedJSON(auth, authKeys)
	e.updatedAt = mustJSON(isoNow())
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// orderedJSON renders the known keys of m in order (unknown keys dropped, as zod does).
func orderedJSON(m map[string]json.RawMessage, order []string) json.RawMessage {
	var o obj
	for _, k := range order {
		if v, ok := m[k]; ok {
			o = append(o, kv{k, rawJSON(compact(v))})
		}
	}
	return json.RawMessage(appendJSON(nil, o))
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return []byte("null")
	}
	return b.Bytes()
}

// marshal renders the file as the CLI writes it: 2-space JSON plus a trailing newline.
func (f *providersFile) marshal() []byte {
	provs := obj{}
	for _, e := range f.entries {
		ent := obj{{"settings", rawJSON(orderedJSON(e.settings, settingsKeys))}}
		if len(e.updatedAt) > 0 {
			ent = append(ent, kv{"updatedAt", rawJSON(compact(e.updatedAt))})
		}
		if len(e.token) > 0 {
			ent = append(ent, kv{"tokenSource", rawJSON(compact(e.token))})
		}
		provs = append(provs, kv{e.id, ent})
	}
	top := obj{{"version", 1}}
	if f.lastUsed != "" {
		top = append(top, kv{"lastUsedProvider", f.lastUsed})
	}
	modes := rawJSON("{}")
	if len(f.modes) > 0 && string(f.modes) != "null" {
		modes = compact(f.modes)
	}
	top = append(top, kv{"modes", modes}, kv{"providers", provs})
	var out bytes.Buffer
	if err := json.Indent(&out, appendJSON(nil, top), "", "  "); err != nil {
		panic(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// writeAtomic writes data via <path>.<pid>.tmp + rename with mode 0600; created dirs get 0700.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", path, err)
	}
	tmp := path + "." + strconv.Itoa(os.Getpid()) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// globalSettings holds the global-settings.json fields the fake honours.
type globalSettings struct {
	DisabledTools   []string `json:"disabledTools"`
	ToolAutoApprove *bool    `json:"toolAutoApprove"`
}

func readGlobal(path string) globalSettings {
	var g globalSettings
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &g)
	}
	return g
}
