package settings

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestTakeKey: the container's copy gives its provider's key and custom headers up for a
// placeholder and the proxy's baseUrl; the file on disk holds neither the key nor the headers;
// a run that leaves the placeholder alone brings nothing home, and the user's file keeps its key
// and baseUrl.
func TestTakeKey(t *testing.T) {
	s := realStore(t)
	doc := strings.Replace(string(testdata(t, "o_provider_override.before.json")),
		`"provider": "openai-compatible"`, `"provider": "openai-compatible", "headers": {"X-Team": "team-secret"}`, 1)
	writeReal(t, s.Path, []byte(doc), 0o600)
	c, err := s.PrivateCopy("", Override{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var old string
	taken, err := c.TakeKey("sk-placeholder-1", func(o string) (string, error) { old = o; return "http://127.0.0.1:3129/v1", nil })
	if err != nil {
		t.Fatal(err)
	}
	if taken.Key != "sk-test-123" || taken.BaseURL != "http://127.0.0.1:18080/v1" || old != taken.BaseURL || taken.Headers["X-Team"] != "team-secret" {
		t.Errorf("taken %+v (rebase saw %q)", taken, old)
	}
	b, err := os.ReadFile(c.SettingsPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"sk-test-123", "team-secret", "18080", "sk-test-native"} {
		if strings.Contains(string(b), gone) {
			t.Errorf("the copy still holds %q:\n%s", gone, b)
		}
	}
	for _, want := range []string{`"apiKey": "sk-placeholder-1"`, `"baseUrl": "http://127.0.0.1:3129/v1"`, `"model": "fake-model"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the copy lacks %s:\n%s", want, b)
		}
	}
	if ws := s.MergeAllowed(context.Background(), c, nil); len(ws) > 0 {
		t.Errorf("an untouched copy merged with warnings %v", ws)
	}
	host, _ := os.ReadFile(s.Path)
	if !strings.Contains(string(host), "sk-test-123") || strings.Contains(string(host), "placeholder") || strings.Contains(string(host), "3129") {
		t.Errorf("the user's file changed:\n%s", host)
	}
}

// TestTakeKeyRefusesOAuthAndOddShapes: a block with an OAuth access token, or a key that is not
// a string, keeps the copy as it was.
func TestTakeKeyRefusesOAuthAndOddShapes(t *testing.T) {
	for name, block := range map[string]string{
		"oauth":     `"auth": {"accessToken": "at-1", "expiresAt": 1}`,
		"odd key":   `"apiKey": 42`,
		"odd hdrs":  `"headers": ["x"]`,
		"odd value": `"headers": {"X": 1}`,
	} {
		s := realStore(t)
		writeReal(t, s.Path, []byte(`{"version":1,"lastUsedProvider":"anthropic","providers":{"anthropic":{"settings":{"provider":"anthropic",`+block+`},"updatedAt":"x","tokenSource":"manual"}}}`), 0o600)
		c, err := s.PrivateCopy("", Override{})
		if err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(c.SettingsPath)
		if _, err := c.TakeKey("p", func(string) (string, error) { return "http://127.0.0.1:3129", nil }); !errors.Is(err, ErrNotKeyless) {
			t.Errorf("%s: got %v, want ErrNotKeyless", name, err)
		}
		after, _ := os.ReadFile(c.SettingsPath)
		if string(after) != string(before) {
			t.Errorf("%s: the copy changed on a refusal", name)
		}
		c.Close()
	}
}

// TestTakeKeyWithoutSettings: without a providers.json (the key comes from the environment) the
// copy gets one with the provider's block: the placeholder and the proxy's baseUrl.
func TestTakeKeyWithoutSettings(t *testing.T) {
	s := realStore(t)
	c, err := s.PrivateCopy("", Override{Provider: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	taken, err := c.TakeKey("p1", func(o string) (string, error) { return "http://127.0.0.1:3129/v1", nil })
	if err != nil || taken.Key != "" {
		t.Fatalf("got %+v, %v", taken, err)
	}
	b, _ := os.ReadFile(c.SettingsPath)
	for _, want := range []string{`"lastUsedProvider": "anthropic"`, `"apiKey": "p1"`, `"tokenSource": "manual"`, `"provider": "anthropic"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the new copy lacks %s:\n%s", want, b)
		}
	}
}
