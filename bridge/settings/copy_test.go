package settings

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

func TestPrivateCopy(t *testing.T) {
	s := realStore(t)
	settingsDir := filepath.Dir(s.Path)
	dataDir := filepath.Dir(settingsDir)
	writeReal(t, s.Path, testdata(t, "o_provider_override.before.json"), 0o644)
	files := map[string]string{
		"global-settings.json":         `{"toolAutoApprove":false}`,
		"models.json":                  `{"openai-compatible":{"models":["fake-model"]}}`,
		"cline_mcp_settings.json":      `{"mcpServers":{"x":{"env":{"TOKEN":"mcp-secret"}}}}`,
		"cache.db":                     "x",
		"state.sqlite-wal":             "x",
		"x.lock":                       "x",
		"hooks.log":                    "x",
		".providers.json.123.tmp":      "x",
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

	for _, tt := range []struct {
		ov           Override
		target, gone string // the provider the copy holds, and the key it must not hold
	}{
		{Override{}, "openai-compatible", "sk-test-native"},
		{Override{Provider: "openai-native", Model: "m"}, "openai-native", "sk-test-123"},
	} {
		c, err := s.PrivateCopy("", tt.ov)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(c.Dir) != s.TempDir {
			t.Errorf("got copy in %s, want under %s", c.Dir, s.TempDir)
		}
		if got, want := c.SettingsPath, filepath.Join(c.Dir, "settings", "providers.json"); got != want {
			t.Errorf("got SettingsPath %s, want %s", got, want)
		}
		if c.Target != tt.target {
			t.Errorf("override %+v: got target %q, want %q", tt.ov, c.Target, tt.target)
		}
		var got []string
		err = filepath.WalkDir(c.Dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(c.Dir, path)
			got = append(got, filepath.ToSlash(rel))
			if !d.IsDir() {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				for _, secret := range []string{tt.gone, "mcp-secret", "outside"} {
					if strings.Contains(string(data), secret) {
						t.Errorf("%s holds %q: the container may only see the provider it uses", rel, secret)
					}
				}
			}
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
		want := []string{".", "settings", "settings/global-settings.json", "settings/models.json", "settings/providers.json"}
		if !slices.Equal(got, want) {
			t.Errorf("got copied %v, want %v", got, want)
		}
		skipped := slices.Sorted(slices.Values(c.Skipped))
		wantSkipped := []string{".providers.json.123.tmp", "cache.db", "cline_mcp_settings.json", "hooks.log", "state.sqlite-wal", "sub", "x.lock"}
		if runtime.GOOS != "windows" {
			wantSkipped = slices.Sorted(slices.Values(append(wantSkipped, "link.json")))
		}
		if !slices.Equal(skipped, wantSkipped) {
			t.Errorf("got skipped %v, want %v", skipped, wantSkipped)
		}
		doc, err := parseObject(readReal(t, c.SettingsPath))
		if err != nil {
			t.Fatal(err)
		}
		if ps := doc.getObject("providers"); ps == nil || !slices.Equal(ps.keys, []string{tt.target}) {
			t.Errorf("copied providers: got %v, want only %s", ps, tt.target)
		}
		if lu, _ := doc.get("lastUsedProvider"); lu != "openai-compatible" || !slices.Equal(doc.keys, []string{"version", "lastUsedProvider", "modes", "providers"}) {
			t.Errorf("copied top level: got keys %v lastUsedProvider %v, want the host's non-secret settings", doc.keys, lu)
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
}

// A container that may use cline-pass also gets cline's block, where its credentials live, and
// still no other provider's.
func TestPrivateCopyCredentialHome(t *testing.T) {
	s := realStore(t)
	writeReal(t, s.Path, []byte(`{"version":1,"lastUsedProvider":"cline-pass","providers":{`+
		`"openai-native":{"settings":{"provider":"openai-native","apiKey":"sk-other-key"}},`+
		`"cline":{"settings":{"provider":"cline","auth":{"accessToken":"at","refreshToken":"rt"}}},`+
		`"cline-pass":{"settings":{"provider":"cline-pass","model":"m"}}}}`), 0o600)
	c, err := s.PrivateCopy("", Override{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	doc, err := parseObject(readReal(t, c.SettingsPath))
	if err != nil {
		t.Fatal(err)
	}
	if ps := doc.getObject("providers"); ps == nil || !slices.Equal(ps.keys, []string{"cline", "cline-pass"}) {
		t.Errorf("copied providers: got %v, want cline and cline-pass only", ps)
	}
	if strings.Contains(string(readReal(t, c.SettingsPath)), "sk-other-key") {
		t.Error("the copy holds another provider's key")
	}
}

func readReal(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPrivateCopyCustomPathAndNoFile(t *testing.T) {
	root := t.TempDir()
	s := &Store{FS: afero.NewOsFs(), Path: filepath.Join(root, "custom", "prov.json"), TempDir: root}
	writeReal(t, s.Path, []byte("{}\n"), 0o644)
	writeReal(t, filepath.Join(root, "custom", "unrelated.json"), []byte("{}"), 0o644)
	c, err := s.PrivateCopy(t.TempDir(), Override{})
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
	c2, err := s.PrivateCopy("", Override{})
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
