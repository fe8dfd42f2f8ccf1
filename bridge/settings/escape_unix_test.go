//go:build unix

package settings

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Escape tests of the settings trust boundary (MergeAllowed): what a container may do to its
// private copy, and what must never reach the host's providers.json. Each writes its attack
// into the copy first and checks it is there, so a test cannot pass because the attack never
// happened.

// hostWithOAuth is a host providers.json whose default provider signed in with OAuth.
func hostWithOAuth(t *testing.T) []byte {
	return edit(t, testdata(t, "o_provider_override.before.json"), func(o *object) {
		oauth("openai-compatible", "at-old", "rt-old", 1)(o)
		setPath(o, "providers.openai-compatible.settings.auth.accountId", "acct-1")
	})
}

func realCopy(t *testing.T, host []byte) (*Store, *Copy) {
	t.Helper()
	s := realStore(t)
	writeReal(t, s.Path, host, 0o600)
	c, err := s.PrivateCopy("", Override{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return s, c
}

func TestEscapeSettingsRewritesDropped(t *testing.T) {
	host := hostWithOAuth(t)
	s, c := realCopy(t, host)
	const marker = "ATTACKER-MARKER-7f3a"
	attack := edit(t, c.snapshot, func(o *object) {
		setPath(o, "providers.openai-compatible.settings.baseUrl", "https://"+marker+".invalid/v1")
		setPath(o, "providers.openai-compatible.settings.apiKey", "sk-"+marker)
		setPath(o, "providers.openai-compatible.settings.headers", map[string]any{"X-Exfil": marker})
		setPath(o, "providers.openai-compatible.settings.auth.metadata.provider", marker)
		setPath(o, "providers.evil.settings", map[string]any{"provider": "evil", "apiKey": "sk-" + marker, "baseUrl": "https://" + marker + ".invalid"})
		setPath(o, "lastUsedProvider", "evil")
		setPath(o, "telemetry", marker)
		// The honest part: a token refresh.
		setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
		setPath(o, "providers.openai-compatible.settings.auth.refreshToken", "rt-new")
		setPath(o, "providers.openai-compatible.settings.auth.expiresAt", 4102444800000)
		setPath(o, "providers.openai-compatible.updatedAt", "2026-12-02T09:00:00.000Z")
	})
	writeReal(t, c.SettingsPath, attack, 0o600)
	if !strings.Contains(string(readReal(t, c.SettingsPath)), marker) {
		t.Fatal("the attack is not in the copy")
	}
	warns := s.MergeAllowed(c)
	checkWarnings(t, warns, []string{"dropped"})
	for _, field := range []string{"providers.openai-compatible.settings.baseUrl", "settings.apiKey", "settings.headers",
		"settings.auth.metadata.provider", "providers.evil", "lastUsedProvider", "telemetry"} {
		if !strings.Contains(warns[0], field) {
			t.Errorf("the warning does not name %s: %q", field, warns[0])
		}
	}
	if strings.Contains(strings.Join(warns, "\n"), marker) {
		t.Errorf("a warning carries a value the run wrote: %q", warns)
	}
	got := readReal(t, s.Path)
	if strings.Contains(string(got), marker) {
		t.Fatalf("the attack reached the host file:\n%s", got)
	}
	want := edit(t, host, func(o *object) {
		setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
		setPath(o, "providers.openai-compatible.settings.auth.refreshToken", "rt-new")
		setPath(o, "providers.openai-compatible.settings.auth.expiresAt", 4102444800000)
		setPath(o, "providers.openai-compatible.updatedAt", "2026-12-02T09:00:00.000Z")
	})
	if string(got) != string(want) {
		t.Errorf("got host file\n%s\nwant only the token refresh merged\n%s", got, want)
	}
}

func TestEscapeSettingsTokensOfAnotherAccountOrForAnAPIKeyProvider(t *testing.T) {
	t.Run("another account", func(t *testing.T) {
		host := hostWithOAuth(t)
		s, c := realCopy(t, host)
		writeReal(t, c.SettingsPath, edit(t, c.snapshot, func(o *object) {
			setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
			setPath(o, "providers.openai-compatible.settings.auth.accountId", "acct-attacker")
		}), 0o600)
		checkWarnings(t, s.MergeAllowed(c), []string{"tokens of another account"})
		if got := readReal(t, s.Path); string(got) != string(host) {
			t.Errorf("got\n%s\nwant the host file untouched", got)
		}
	})
	t.Run("an API-key provider gains a token", func(t *testing.T) {
		host := testdata(t, "a_text_pong.before.json")
		s, c := realCopy(t, host)
		writeReal(t, c.SettingsPath, edit(t, c.snapshot, func(o *object) {
			setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
		}), 0o600)
		checkWarnings(t, s.MergeAllowed(c), []string{"held no OAuth credential"})
		if got := readReal(t, s.Path); string(got) != string(host) {
			t.Errorf("got\n%s\nwant the host file untouched", got)
		}
	})
}

func TestEscapeSettingsCopyReplaced(t *testing.T) {
	const marker = "HOST-FILE-MARKER-91c2"
	tests := []struct {
		name    string
		replace func(t *testing.T, c *Copy, hostFile string)
		want    string
	}{
		{"symlink to a host file", func(t *testing.T, c *Copy, hostFile string) {
			os.Remove(c.SettingsPath)
			if err := os.Symlink(hostFile, c.SettingsPath); err != nil {
				t.Fatal(err)
			}
		}, "a symlink"},
		{"settings dir is a symlink to a host dir", func(t *testing.T, c *Copy, hostFile string) {
			dir := filepath.Dir(c.SettingsPath)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Dir(hostFile), dir); err != nil {
				t.Fatal(err)
			}
		}, "the settings dir was replaced"},
		{"FIFO", func(t *testing.T, c *Copy, hostFile string) {
			os.Remove(c.SettingsPath)
			if err := syscall.Mkfifo(c.SettingsPath, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "a FIFO"},
		{"huge file", func(t *testing.T, c *Copy, hostFile string) {
			big := append(edit(t, c.snapshot, func(o *object) {
				setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
			}), []byte(strings.Repeat(" ", maxFileSize))...)
			writeReal(t, c.SettingsPath, big, 0o600)
		}, "over the"},
		{"invalid JSON", func(t *testing.T, c *Copy, hostFile string) {
			writeReal(t, c.SettingsPath, []byte(`{"providers": {`+marker), 0o600)
		}, "unusable settings copy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := hostWithOAuth(t)
			s, c := realCopy(t, host)
			// A file of the host the container may know the path of, shaped like a settings
			// file that would refresh a token and carry the marker with it.
			hostDir := t.TempDir()
			hostFile := filepath.Join(hostDir, "providers.json")
			writeReal(t, hostFile, edit(t, c.snapshot, func(o *object) {
				setPath(o, "providers.openai-compatible.settings.auth.accessToken", marker)
			}), 0o600)
			tt.replace(t, c, hostFile)
			done := make(chan []string, 1)
			go func() { done <- s.MergeAllowed(c) }()
			var warns []string
			select {
			case warns = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("MergeAllowed blocked on the replaced copy")
			}
			checkWarnings(t, warns, []string{tt.want})
			if got := readReal(t, s.Path); string(got) != string(host) {
				t.Errorf("got host file\n%s\nwant it untouched", got)
			}
		})
	}
}
