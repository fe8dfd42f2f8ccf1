//go:build unix

package settings

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// realCopy is a container's copy (PrivateCopy) of host; realHostCopy a host override run's.
func realCopy(t *testing.T, host []byte) (*Store, *Copy) { return realCopyOf(t, host, false) }

func realHostCopy(t *testing.T, host []byte) (*Store, *Copy) { return realCopyOf(t, host, true) }

func realCopyOf(t *testing.T, host []byte, full bool) (*Store, *Copy) {
	t.Helper()
	s := realStore(t)
	writeReal(t, s.Path, host, 0o600)
	c, err := s.newCopy("", Override{}, full)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return s, c
}

// settingsAttack is what a hostile run writes into its copy: an endpoint, a key, headers and a
// provider of its own, and a token "refresh".
func settingsAttack(marker string) func(o *object) {
	return func(o *object) {
		setPath(o, "providers.openai-compatible.settings.baseUrl", "https://"+marker+".invalid/v1")
		setPath(o, "providers.openai-compatible.settings.apiKey", "sk-"+marker)
		setPath(o, "providers.openai-compatible.settings.headers", map[string]any{"X-Exfil": marker})
		setPath(o, "providers.openai-compatible.settings.auth.metadata.provider", marker)
		setPath(o, "providers.evil.settings", map[string]any{"provider": "evil", "apiKey": "sk-" + marker, "baseUrl": "https://" + marker + ".invalid"})
		setPath(o, "lastUsedProvider", "evil")
		setPath(o, "telemetry", marker)
		setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
		setPath(o, "providers.openai-compatible.settings.auth.refreshToken", "rt-new")
		setPath(o, "providers.openai-compatible.settings.auth.expiresAt", 4102444800000)
		setPath(o, "providers.openai-compatible.updatedAt", "2026-12-02T09:00:00.000Z")
	}
}

// TestEscapeSettingsRewritesDropped: nothing of a container's copy comes back — not the endpoint,
// key, headers or provider it planted, and not its tokens either: every field
// is named in a warning, no value is.
func TestEscapeSettingsRewritesDropped(t *testing.T) {
	host := hostWithOAuth(t)
	s, c := realCopy(t, host)
	const marker = "ATTACKER-MARKER-7f3a"
	writeReal(t, c.SettingsPath, edit(t, c.snapshot, settingsAttack(marker)), 0o600)
	if !strings.Contains(string(readReal(t, c.SettingsPath)), marker) {
		t.Fatal("the attack is not in the copy")
	}
	warns := s.MergeAllowed(context.Background(), c, nil)
	checkWarnings(t, warns, []string{"wrote credentials", "dropped"})
	all := strings.Join(warns, "\n")
	for _, field := range []string{"providers.openai-compatible.settings.baseUrl", "settings.apiKey", "settings.headers",
		"settings.auth.metadata.provider", "settings.auth.accessToken", "settings.auth.refreshToken", "settings.auth.expiresAt",
		"providers.evil", "lastUsedProvider", "telemetry"} {
		if !strings.Contains(all, field) {
			t.Errorf("the warnings do not name %s: %q", field, warns)
		}
	}
	if strings.Contains(all, marker) || strings.Contains(all, "at-new") {
		t.Errorf("a warning carries a value the run wrote: %q", warns)
	}
	if got := readReal(t, s.Path); string(got) != string(host) {
		t.Fatalf("got host file\n%s\nwant it untouched", got)
	}
	for _, v := range []string{"sk-" + marker, marker} {
		if !slices.Contains(c.Secrets(), v) {
			t.Errorf("Secrets %q lack %q, a credential the run wrote", c.Secrets(), v)
		}
	}
}

// TestEscapeHostCopyKeepsOnlyTheRefresh: a host override run's copy (the CLI on the user's machine)
// still brings its token refresh home, and nothing else.
func TestEscapeHostCopyKeepsOnlyTheRefresh(t *testing.T) {
	host := hostWithOAuth(t)
	s, c := realHostCopy(t, host)
	const marker = "ATTACKER-MARKER-7f3a"
	writeReal(t, c.SettingsPath, edit(t, c.snapshot, settingsAttack(marker)), 0o600)
	warns := s.MergeAllowed(context.Background(), c, nil)
	checkWarnings(t, warns, []string{"dropped"})
	for _, field := range []string{"providers.openai-compatible.settings.baseUrl", "settings.apiKey", "settings.headers",
		"settings.auth.metadata.provider", "providers.evil", "lastUsedProvider", "telemetry"} {
		if !strings.Contains(warns[0], field) {
			t.Errorf("the warning does not name %s: %q", field, warns[0])
		}
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

// TestEscapeContainerTokenSwap: the container's copy holds no refresh token, and
// a run that swaps in another account's tokens while keeping accountId gets nothing merged.
func TestEscapeContainerTokenSwap(t *testing.T) {
	host := hostWithOAuth(t)
	s, c := realCopy(t, host)
	if strings.Contains(string(readReal(t, c.SettingsPath)), "rt-old") || strings.Contains(string(readReal(t, c.SettingsPath)), "refreshToken") {
		t.Fatalf("the container's copy holds a refresh token:\n%s", readReal(t, c.SettingsPath))
	}
	if !strings.Contains(string(readReal(t, c.SettingsPath)), `"accessToken": "at-old"`) {
		t.Fatalf("the container's copy lost the access token the run needs:\n%s", readReal(t, c.SettingsPath))
	}
	writeReal(t, c.SettingsPath, edit(t, c.snapshot, func(o *object) {
		setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-attacker-account")
		setPath(o, "providers.openai-compatible.settings.auth.refreshToken", "rt-attacker-account")
	}), 0o600)
	if !strings.Contains(string(readReal(t, c.SettingsPath)), "rt-attacker-account") {
		t.Fatal("the swap is not in the copy")
	}
	checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), []string{"settings.auth.accessToken, providers.openai-compatible.settings.auth.refreshToken"})
	if got := readReal(t, s.Path); string(got) != string(host) {
		t.Errorf("got\n%s\nwant the host file untouched", got)
	}
	for _, v := range []string{"at-attacker-account", "rt-attacker-account"} {
		if !slices.Contains(c.Secrets(), v) {
			t.Errorf("Secrets %q lack %q, a token the run wrote", c.Secrets(), v)
		}
	}
}

// TestEscapeNestedUserInfo: an arbitrary userInfo object with an endpoint and a
// key inside never lands in the user's file. A container's copy brings none of it back; a host
// run's only the known short strings, with a warning naming the rest.
func TestEscapeNestedUserInfo(t *testing.T) {
	const marker = "USERINFO-MARKER-33d1"
	nested := map[string]any{"email": "u@example.invalid", "clineUserId": "acct-1", "name": "U",
		"baseUrl": "https://" + marker + ".invalid", "apiKey": "sk-" + marker, "deep": map[string]any{"x": marker}, "accounts": []any{"a1"}}
	for _, full := range []bool{false, true} {
		host := hostWithOAuth(t)
		s, c := realCopyOf(t, host, full)
		writeReal(t, c.SettingsPath, edit(t, c.snapshot, func(o *object) {
			setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
			setPath(o, "providers.openai-compatible.settings.auth.metadata.userInfo", nested)
		}), 0o600)
		if !strings.Contains(string(readReal(t, c.SettingsPath)), marker) {
			t.Fatal("the attack is not in the copy")
		}
		warns := strings.Join(s.MergeAllowed(context.Background(), c, nil), "\n")
		got := readReal(t, s.Path)
		if strings.Contains(string(got), marker) || strings.Contains(string(got), "accounts") {
			t.Fatalf("host copy %v: the nested userInfo reached the host file:\n%s", full, got)
		}
		for _, f := range []string{"userInfo.baseUrl", "userInfo.apiKey", "userInfo.deep"} {
			if !strings.Contains(warns, f) {
				t.Errorf("host copy %v: warnings %q do not name %s", full, warns, f)
			}
		}
		if !full {
			if string(got) != string(host) {
				t.Errorf("container: got\n%s\nwant the host file untouched", got)
			}
			continue
		}
		want := edit(t, host, func(o *object) {
			setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
			setPath(o, "providers.openai-compatible.settings.auth.metadata.userInfo", map[string]any{"email": "u@example.invalid", "clineUserId": "acct-1", "name": "U"})
		})
		if string(got) != string(want) {
			t.Errorf("host copy: got\n%s\nwant the token and userInfo's short strings\n%s", got, want)
		}
	}
}

func TestEscapeSettingsTokensOfAnotherAccountOrForAnAPIKeyProvider(t *testing.T) {
	for _, full := range []bool{false, true} {
		want := map[bool][2]string{false: {"wrote credentials", "wrote credentials"}, true: {"tokens of another account", "held no OAuth credential"}}[full]
		t.Run(fmt.Sprintf("another account, host copy %v", full), func(t *testing.T) {
			host := hostWithOAuth(t)
			s, c := realCopyOf(t, host, full)
			writeReal(t, c.SettingsPath, edit(t, c.snapshot, func(o *object) {
				setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
				setPath(o, "providers.openai-compatible.settings.auth.accountId", "acct-attacker")
			}), 0o600)
			checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), []string{want[0]})
			if got := readReal(t, s.Path); string(got) != string(host) {
				t.Errorf("got\n%s\nwant the host file untouched", got)
			}
		})
		t.Run(fmt.Sprintf("an API-key provider gains a token, host copy %v", full), func(t *testing.T) {
			host := testdata(t, "a_text_pong.before.json")
			s, c := realCopyOf(t, host, full)
			writeReal(t, c.SettingsPath, edit(t, c.snapshot, func(o *object) {
				setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
			}), 0o600)
			checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), []string{want[1]})
			if got := readReal(t, s.Path); string(got) != string(host) {
				t.Errorf("got\n%s\nwant the host file untouched", got)
			}
		})
	}
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
			go func() { done <- s.MergeAllowed(context.Background(), c, nil) }()
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
