package settings

import (
	"context"
	"testing"

	"github.com/spf13/afero"
)

func TestMergeAllowed(t *testing.T) {
	pong := testdata(t, "a_text_pong.before.json")
	prov := testdata(t, "o_provider_override.before.json")
	withOAuth := edit(t, prov, oauth("openai-native", "at-old", "rt-old", 1))
	native := Override{Provider: "openai-native"}
	tests := []struct {
		name     string
		host     []byte // host file when the copy is made (nil: none)
		ov       Override
		inCopy   func(o *object) // what Cline does to the copy
		meantime func(o *object) // what happens to the host file during the run (nil: nothing)
		golden   string          // "" = host file must not be written
		wantWarn []string
	}{
		{
			name: "refreshed token merged, tracked fields not", host: withOAuth, ov: Override{"openai-native", "gpt-fake"},
			inCopy: func(o *object) {
				setPath(o, "lastUsedProvider", "openai-native")
				setPath(o, "providers.openai-native.settings.model", "gpt-fake")
				setPath(o, "providers.openai-native.settings.reasoning", map[string]any{"effort": "high"})
				setPath(o, "providers.openai-native.settings.auth.accessToken", "at-new")
				setPath(o, "providers.openai-native.settings.auth.refreshToken", "rt-new")
				setPath(o, "providers.openai-native.updatedAt", "2026-12-02T09:00:00.000Z")
			},
			golden: "merge_token_refresh",
		},
		{
			name: "host refreshed another provider meanwhile: both kept", host: withOAuth, ov: native,
			inCopy: func(o *object) {
				setPath(o, "providers.openai-native.settings.auth.accessToken", "at-new")
				setPath(o, "providers.openai-native.updatedAt", "2026-12-02T09:00:00.000Z")
			},
			meantime: func(o *object) {
				setPath(o, "providers.openai-compatible.settings.apiKey", "sk-other-456")
				setPath(o, "providers.openai-compatible.updatedAt", "2026-12-02T08:59:00.000Z")
			},
			golden: "merge_both_kept",
		},
		{
			name: "same token changed on both sides: the copy's wins", host: withOAuth, ov: native,
			inCopy:   func(o *object) { setPath(o, "providers.openai-native.settings.auth.accessToken", "at-new") },
			meantime: func(o *object) { setPath(o, "providers.openai-native.settings.auth.accessToken", "at-host") },
			golden:   "merge_copy_wins",
		},
		{
			name: "only tracked fields and updatedAt changed: no write, no warning", host: pong, ov: Override{Model: "m2"},
			inCopy: func(o *object) {
				setPath(o, "providers.openai-compatible.settings.model", "m2")
				setPath(o, "providers.openai-compatible.updatedAt", "2026-12-02T09:00:00.000Z")
			},
		},
		{
			name: "override to an unconfigured provider: its stub block is not merged, silently",
			host: pong, ov: Override{"lmstudio", "m"},
			inCopy: func(o *object) {
				setPath(o, "lastUsedProvider", "lmstudio")
				setPath(o, "providers.lmstudio.settings", map[string]any{"provider": "lmstudio", "model": "m"})
				setPath(o, "providers.lmstudio.updatedAt", "2026-12-02T09:00:00.000Z")
			},
		},
		{
			name: "the copy was wiped by an invalid entry: host untouched", host: testdata(t, "o_invalid_providers_json_entry.before.json"),
			ov: Override{Provider: "lmstudio"},
			inCopy: func(o *object) {
				wiped, _ := parseObject(testdata(t, "o_invalid_providers_json_entry.after.json"))
				*o = *wiped
			},
			wantWarn: []string{"lmstudio from its private copy", "changed lastUsedProvider"},
		},
		{
			name: "provider removed from the host meanwhile stays removed", host: withOAuth, ov: native,
			inCopy:   func(o *object) { setPath(o, "providers.openai-native.settings.auth.accessToken", "at-new") },
			meantime: func(o *object) { o.getObject("providers").del("openai-native") },
			golden:   "merge_host_removed",
		},
		{
			name: "no host file at copy time: credentials set up in the container are not kept", host: nil, ov: Override{},
			inCopy: func(o *object) {
				auth, _ := parseObject(testdata(t, "auth_quick_setup.after.json"))
				*o = *auth
			},
			wantWarn: []string{"lastUsedProvider, providers.openai-compatible (a provider that was not in the copy)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, fs := memStore(t)
			if tt.host != nil {
				put(t, s, tt.host)
			}
			c, err := s.HostCopy("", tt.ov)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			copyData := []byte("{}")
			if c.existed {
				copyData = c.snapshot
			}
			copyData = edit(t, copyData, tt.inCopy)
			if err := afero.WriteFile(s.FS, c.SettingsPath, copyData, 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.meantime != nil {
				put(t, s, edit(t, get(t, s), tt.meantime))
			}
			var hostBefore []byte
			if ok, _ := afero.Exists(s.FS, s.Path); ok {
				hostBefore = get(t, s)
			}
			renames := fs.renames
			checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), tt.wantWarn)
			if tt.golden == "" {
				if fs.renames != renames {
					t.Errorf("got %d writes, want none", fs.renames-renames)
				}
				if hostBefore != nil {
					if got := get(t, s); string(got) != string(hostBefore) {
						t.Errorf("got\n%s\nwant the host file unchanged\n%s", got, hostBefore)
					}
				} else if ok, _ := afero.Exists(s.FS, s.Path); ok {
					t.Errorf("a host file was created from the container's copy")
				}
				return
			}
			golden(t, tt.golden, get(t, s))
		})
	}
}

func TestMergeAllowedUnusableFiles(t *testing.T) {
	pong := testdata(t, "a_text_pong.before.json")
	t.Run("copy unparseable", func(t *testing.T) {
		s, _ := memStore(t)
		put(t, s, pong)
		c, err := s.PrivateCopy("", Override{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := afero.WriteFile(s.FS, c.SettingsPath, []byte(`{"apiKey":"sk-test-123"`), 0o600); err != nil {
			t.Fatal(err)
		}
		checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), []string{"unusable settings copy"})
		if got := get(t, s); string(got) != string(pong) {
			t.Errorf("got\n%s\nwant untouched", got)
		}
	})
	t.Run("host unparseable at merge time", func(t *testing.T) {
		s, _ := memStore(t)
		put(t, s, edit(t, pong, oauth("openai-compatible", "at-old", "rt-old", 1)))
		c, err := s.HostCopy("", Override{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := afero.WriteFile(s.FS, c.SettingsPath, edit(t, c.snapshot, func(o *object) {
			setPath(o, "providers.openai-compatible.settings.auth.accessToken", "at-new")
		}), 0o600); err != nil {
			t.Fatal(err)
		}
		broken := []byte("{\"version\":")
		put(t, s, broken)
		checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), []string{"is not usable"})
		if got := get(t, s); string(got) != string(broken) {
			t.Errorf("got %q, want the broken bytes untouched", got)
		}
	})
	t.Run("copy deleted by the container: nothing merged", func(t *testing.T) {
		s, fs := memStore(t)
		put(t, s, pong)
		c, err := s.PrivateCopy("", Override{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := s.FS.Remove(c.SettingsPath); err != nil {
			t.Fatal(err)
		}
		checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), nil)
		if fs.renames != 0 {
			t.Errorf("got %d writes, want none", fs.renames)
		}
	})
	t.Run("host file unusable at copy time: the container starts without it", func(t *testing.T) {
		s, _ := memStore(t)
		put(t, s, []byte(`{"providers":`))
		c, err := s.PrivateCopy("", Override{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		checkWarnings(t, c.Warnings, []string{"the container starts without it"})
		if ok, _ := afero.Exists(s.FS, c.SettingsPath); ok {
			t.Errorf("the unusable file was copied")
		}
	})
}
