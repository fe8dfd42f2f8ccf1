package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// runCallProvider calls the run's provider the way the real CLI does: POST <baseUrl>/<path=echo>
// with its settings' apiKey (else the env key=, default OPENAI_API_KEY) in header= (Authorization
// as a Bearer token, or X-Api-Key), plus extra_auth= sent as a second Authorization header (a run
// that tries another account's key). It reports what its settings held (base_url, the first 25 bytes of the key: api_key_prefix), the
// answer (status, head), and — with needle= (the hex of a key, each byte XOR 0xff, so the prompt
// never holds it) — where in the container the key was found: its environment, every process's
// environ and cmdline, and the files under its data dir, HOME and /tmp.
func runCallProvider(s *session) int { return s.probe(func() obj { return callProvider(s) }) }

// callProvider makes the request of call_provider and reports it.
func callProvider(s *session) obj {
	base, key := providerSettings(s.paths.providers, s.provider)
	if key == "" {
		key = os.Getenv(s.param("key", "OPENAI_API_KEY"))
	}
	// The key's first 25 bytes: a placeholder's prefix survives the result's redaction.
	r := obj{{"provider", s.provider}, {"base_url", base}, {"api_key_prefix", key[:min(25, len(key))]}}
	req, err := http.NewRequest("POST", strings.TrimRight(base, "/")+"/"+s.param("path", "echo"), strings.NewReader(`{"model":"fake"}`))
	if err != nil {
		return append(r, kv{"result", err.Error()})
	}
	if h := s.param("header", "Authorization"); strings.EqualFold(h, "Authorization") {
		req.Header.Set("Authorization", "Bearer "+key)
	} else {
		req.Header.Set(h, key)
	}
	if extra := s.param("extra_auth", ""); extra != "" {
		req.Header.Add("Authorization", "Bearer "+extra)
	}
	c := &http.Client{Timeout: time.Minute} // NO_PROXY covers the loopback baseUrl
	resp, err := c.Do(req)
	if err != nil {
		r = append(r, kv{"result", err.Error()})
	} else {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		r = append(r, kv{"result", "ok"}, kv{"status", resp.StatusCode}, kv{"head", string(head)})
	}
	if n := s.param("needle", ""); n != "" {
		r = append(r, kv{"needle_found", findNeedle(n, s.paths.dataDir)})
	}
	return r
}

// providerSettings are the baseUrl and apiKey of provider in the providers.json at path.
func providerSettings(path, provider string) (base, key string) {
	var doc struct {
		Providers map[string]struct {
			Settings struct {
				BaseURL string `json:"baseUrl"`
				APIKey  string `json:"apiKey"`
			} `json:"settings"`
		} `json:"providers"`
	}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &doc)
	}
	st := doc.Providers[provider].Settings
	return st.BaseURL, st.APIKey
}

// findNeedle decodes the XOR-masked key and lists where it occurs.
func findNeedle(masked, dataDir string) []string {
	b, err := hex.DecodeString(masked)
	if err != nil || len(b) < 8 {
		return []string{"bad needle"}
	}
	for i := range b {
		b[i] ^= 0xff
	}
	found := []string{}
	if bytes.Contains([]byte(strings.Join(os.Environ(), "\n")), b) {
		found = append(found, "environment")
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		for _, f := range []string{"environ", "cmdline"} {
			if data, err := os.ReadFile(filepath.Join(p, f)); err == nil && bytes.Contains(data, b) {
				found = append(found, filepath.Join(p, f))
			}
		}
	}
	for _, root := range []string{dataDir, os.Getenv("HOME"), "/tmp"} {
		if root == "" {
			continue
		}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, b) {
				found = append(found, p)
			}
			return nil
		})
	}
	return found
}
