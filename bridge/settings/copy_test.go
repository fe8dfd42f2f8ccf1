package settings

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/spf13/afero"
)

func TestPrivateCopy(t *testing.T) {
	s := realStore(t)
	settingsDir := filepath.Dir(s.Path)
	dataDir := filepath.Dir(settingsDir)
	writeReal(t, s.Path, testdata(t, "a_text_pong.before.json"), 0o644)
	files := map[string]string{
		"global-settings.json":         `{"toolAutoApprove":false}`,
		"cline_mcp_settings.json":      `{}`,
		"cache.db":                     "x",
		"state.sqlite-wal":             "x",
		"x.lock":                       "x",
		"hooks.log":                    "x",
		".providers.json.123.tmp":      "x",
		"big.json":                     string(make([]byte, maxCopyFile+1)),
		"../sessions/1_abc/1_abc.json": "{}",
		"../db/cline.db":               "x",
	}
	for name, content := range files {
		writeReal(t, filepath.Join(settingsDir, name), []byte(content), 0o644)
	}
	if err := os.Mkdir(filepath.Join(settingsDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		secret := filepath.Join(dataDir, "..", "secret.txt")
		writeReal(t, secret, []byte("outside"), 0o600)
		if err := os.Symlink(secret, filepath.Join(settingsDir, "link.json")); err != nil {
			t.Fatal(err)
		}
	}

	c, err := s.PrivateCopy("")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(c.Dir) != s.TempDir {
		t.Errorf("got copy in %s, want under %s", c.Dir, s.TempDir)
	}
	if got, want := c.SettingsPath, filepath.Join(c.Dir, "settings", "providers.json"); got != want {
		t.Errorf("got SettingsPath %s, want %s", got, want)
	}
	var got []string
	err = filepath.WalkDir(c.Dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.Dir, path)
		got = append(got, filepath.ToSlash(rel))
		if runtime.GOOS == "windows" {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: got mode %v, want %v", rel, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{".", "settings", "settings/cline_mcp_settings.json", "settings/global-settings.json", "settings/providers.json"}
	if !slices.Equal(got, want) {
		t.Errorf("got copied %v, want %v", got, want)
	}
	skipped := slices.Sorted(slices.Values(c.Skipped))
	wantSkipped := []string{".providers.json.123.tmp", "big.json", "cache.db", "hooks.log", "state.sqlite-wal", "sub", "x.lock"}
	if runtime.GOOS != "windows" {
		wantSkipped = slices.Sorted(slices.Values(append(wantSkipped, "link.json")))
	}
	if !slices.Equal(skipped, wantSkipped) {
		t.Errorf("got skipped %v, want %v", skipped, wantSkipped)
	}
	if data, _ := os.ReadFile(c.SettingsPath); string(data) != string(testdata(t, "a_text_pong.before.json")) {
		t.Errorf("got copied providers.json\n%s\nwant the host file", data)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("got %v after Close, want the copy gone", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
}

func TestPrivateCopyCustomPathAndNoFile(t *testing.T) {
	root := t.TempDir()
	s := &Store{FS: afero.NewOsFs(), Path: filepath.Join(root, "custom", "prov.json"), TempDir: root}
	writeReal(t, s.Path, []byte("{}\n"), 0o644)
	writeReal(t, filepath.Join(root, "custom", "unrelated.json"), []byte("{}"), 0o644)
	c, err := s.PrivateCopy(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	entries, err := os.ReadDir(filepath.Dir(c.SettingsPath))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "providers.json" {
		t.Errorf("got %v, want only providers.json (neighbours of a custom path are not Cline's)", entries)
	}

	s.Path = filepath.Join(root, "none", "settings", "providers.json")
	c2, err := s.PrivateCopy("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c2.Close() })
	if _, err := os.Stat(c2.SettingsPath); !os.IsNotExist(err) {
		t.Errorf("got %v, want no providers.json in the copy", err)
	}
	if fi, err := os.Stat(filepath.Dir(c2.SettingsPath)); err != nil || !fi.IsDir() {
		t.Errorf("got %v, want an empty settings dir for Cline to write into", err)
	}
}

func TestMergeBack(t *testing.T) {
	pong := testdata(t, "a_text_pong.before.json")
	prov := testdata(t, "o_provider_override.before.json")
	withOAuth := edit(t, prov, oauth("openai-native", "at-old", "rt-old", 1))
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
			name: "host refreshed another provider meanwhile: both kept", host: withOAuth, ov: Override{},
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
			name: "same token changed on both sides: the copy's wins", host: withOAuth,
			inCopy:   func(o *object) { setPath(o, "providers.openai-native.settings.auth.accessToken", "at-new") },
			meantime: func(o *object) { setPath(o, "providers.openai-native.settings.auth.accessToken", "at-host") },
			golden:   "merge_copy_wins",
		},
		{
			name: "only tracked fields and updatedAt changed: no write", host: pong, ov: Override{Model: "m2"},
			inCopy: func(o *object) {
				setPath(o, "providers.openai-compatible.settings.model", "m2")
				setPath(o, "providers.openai-compatible.updatedAt", "2026-12-02T09:00:00.000Z")
			},
		},
		{
			name: "new provider with a key is merged without its model; a stub is not",
			host: pong, ov: Override{"openai-native", "gpt-x"},
			inCopy: func(o *object) {
				setPath(o, "lastUsedProvider", "openai-native")
				setPath(o, "providers.openai-native.settings", map[string]any{"provider": "openai-native", "apiKey": "sk-other-456", "model": "gpt-x"})
				setPath(o, "providers.openai-native.updatedAt", "2026-12-02T09:00:00.000Z")
				setPath(o, "providers.lmstudio.settings", map[string]any{"provider": "lmstudio", "model": "m"})
			},
			golden: "merge_new_provider",
		},
		{
			name: "the copy was wiped by an invalid entry: host untouched", host: testdata(t, "o_invalid_providers_json_entry.before.json"),
			inCopy: func(o *object) {
				wiped, _ := parseObject(testdata(t, "o_invalid_providers_json_entry.after.json"))
				*o = *wiped
			},
			wantWarn: []string{"dropped provider(s) openai-compatible, lmstudio from its private copy"},
		},
		{
			name: "provider removed from the host meanwhile stays removed", host: withOAuth,
			inCopy:   func(o *object) { setPath(o, "providers.openai-native.settings.auth.accessToken", "at-new") },
			meantime: func(o *object) { o.getObject("providers").del("openai-native") },
			golden:   "merge_host_removed",
		},
		{
			name: "no host file at copy time: credentials set up in the container are kept", host: nil, ov: Override{},
			inCopy: func(o *object) {
				auth, _ := parseObject(testdata(t, "auth_quick_setup.after.json"))
				*o = *auth
			},
			golden: "merge_no_host_file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, fs := memStore(t)
			if tt.host != nil {
				put(t, s, tt.host)
			}
			c, err := s.PrivateCopy("")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			copyData := []byte("{}")
			if tt.host != nil {
				copyData = tt.host
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
			checkWarnings(t, s.MergeBack(c, tt.ov), tt.wantWarn)
			if tt.golden == "" {
				if fs.renames != renames {
					t.Errorf("got %d writes, want none", fs.renames-renames)
				}
				if got := get(t, s); string(got) != string(hostBefore) {
					t.Errorf("got\n%s\nwant the host file unchanged\n%s", got, hostBefore)
				}
				return
			}
			golden(t, tt.golden, get(t, s))
		})
	}
}

func TestMergeBackUnusableFiles(t *testing.T) {
	pong := testdata(t, "a_text_pong.before.json")
	t.Run("copy unparseable", func(t *testing.T) {
		s, _ := memStore(t)
		put(t, s, pong)
		c, err := s.PrivateCopy("")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := afero.WriteFile(s.FS, c.SettingsPath, []byte(`{"apiKey":"sk-test-123"`), 0o600); err != nil {
			t.Fatal(err)
		}
		checkWarnings(t, s.MergeBack(c, Override{}), []string{"unusable settings copy"})
		if got := get(t, s); string(got) != string(pong) {
			t.Errorf("got\n%s\nwant untouched", got)
		}
	})
	t.Run("host unparseable at merge time", func(t *testing.T) {
		s, _ := memStore(t)
		put(t, s, pong)
		c, err := s.PrivateCopy("")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := afero.WriteFile(s.FS, c.SettingsPath, edit(t, pong, func(o *object) {
			setPath(o, "providers.openai-compatible.settings.apiKey", "sk-other-456")
		}), 0o600); err != nil {
			t.Fatal(err)
		}
		broken := []byte("{\"version\":")
		put(t, s, broken)
		checkWarnings(t, s.MergeBack(c, Override{}), []string{"is not usable"})
		if got := get(t, s); string(got) != string(broken) {
			t.Errorf("got %q, want the broken bytes untouched", got)
		}
	})
	t.Run("copy deleted by the container: nothing merged", func(t *testing.T) {
		s, fs := memStore(t)
		put(t, s, pong)
		c, err := s.PrivateCopy("")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := s.FS.Remove(c.SettingsPath); err != nil {
			t.Fatal(err)
		}
		checkWarnings(t, s.MergeBack(c, Override{}), nil)
		if fs.renames != 0 {
			t.Errorf("got %d writes, want none", fs.renames)
		}
	})
}
