//go:build unix

package run

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const blindHost = `{
  "version": 1,
  "lastUsedProvider": "openai-compatible",
  "providers": {
    "openai-compatible": {
      "settings": {"provider": "openai-compatible", "apiKey": "sk-inside", "model": "m", "baseUrl": "https://llm.example/v1"},
      "tokenSource": "manual"
    }
  }
}`

func blindDir(t *testing.T) (own, file string) {
	t.Helper()
	own = t.TempDir()
	file = filepath.Join(own, "settings", "providers.json")
	if err := os.Mkdir(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(blindHost), 0o600); err != nil {
		t.Fatal(err)
	}
	return own, file
}

// TestBlinderPointsAwayAndBack: Blind(true) leaves the file as the host wrote it but for the
// provider's baseUrl, which names port 0 of loopback; Blind(false) puts the host's bytes back
// exactly, with the file's mode.
func TestBlinderPointsAwayAndBack(t *testing.T) {
	own, file := blindDir(t)
	blind, err := blinder(own, filepath.Join("settings", "providers.json"), "openai-compatible")
	if err != nil || blind == nil {
		t.Fatalf("blinder: %v (nil %v)", err, blind == nil)
	}
	if err := blind(true); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(file)
	if want := strings.Replace(blindHost, "https://llm.example/v1", deadBase, 1); !equalJSONText(got, want) {
		t.Errorf("blinded file\n%s\nwant\n%s", got, want)
	}
	if err := blind(false); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(file)
	info, _ := os.Stat(file)
	if string(got) != blindHost || info.Mode().Perm() != 0o600 {
		t.Errorf("file after Blind(false) %q (mode %v), want the host's bytes, 0600", got, info.Mode())
	}
	left, _ := os.ReadDir(filepath.Dir(file))
	if len(left) != 1 {
		t.Errorf("the settings dir holds %d entries, want providers.json alone", len(left))
	}
}

// equalJSONText compares two JSON texts with their white space left out.
func equalJSONText(a []byte, b string) bool {
	strip := func(s string) string { return strings.Join(strings.Fields(s), "") }
	return strip(string(a)) == strip(b)
}

// TestBlinderFollowsNoLink: a settings dir that became a link out of the spare's directory
// (what a hostile run could plant) fails the write, and the file it points at keeps its bytes
// (the marker, shown to be there first).
func TestBlinderFollowsNoLink(t *testing.T) {
	own, file := blindDir(t)
	blind, err := blinder(own, filepath.Join("settings", "providers.json"), "openai-compatible")
	if err != nil || blind == nil {
		t.Fatalf("blinder: %v", err)
	}
	outside := t.TempDir()
	marker := filepath.Join(outside, "providers.json")
	if err := os.WriteFile(marker, []byte("MARKER"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(marker); !bytes.Equal(b, []byte("MARKER")) {
		t.Fatal("the marker is not there")
	}
	if err := os.RemoveAll(filepath.Dir(file)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Dir(file)); err != nil {
		t.Fatal(err)
	}
	if err := blind(false); err == nil {
		t.Error("a write through a link out of the directory succeeded")
	}
	if b, _ := os.ReadFile(marker); !bytes.Equal(b, []byte("MARKER")) {
		t.Errorf("the file outside was changed: %q", b)
	}
	if left, _ := os.ReadDir(outside); len(left) != 1 {
		t.Errorf("the directory outside holds %d entries, want the marker alone", len(left))
	}
}

// TestBlinderOnlyWhereABaseUrlRedirects: a provider the CLI calls without a baseUrl of its own
// (or whose key cannot be told apart), or a copy without settings for it, gets no blind warm-up.
func TestBlinderOnlyWhereABaseUrlRedirects(t *testing.T) {
	own, _ := blindDir(t)
	rel := filepath.Join("settings", "providers.json")
	for _, target := range []string{"cline", "bedrock", "anthropic"} {
		if blind, err := blinder(own, rel, target); err != nil || blind != nil {
			t.Errorf("%s: blinder gave a Blind (%v, %v); want none", target, blind != nil, err)
		}
	}
	if blind, err := blinder(t.TempDir(), rel, "openai-compatible"); err != nil || blind != nil {
		t.Errorf("no settings file: blinder gave (%v, %v), want none", blind != nil, err)
	}
}
