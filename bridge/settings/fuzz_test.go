package settings

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
)

// FuzzSettingsRestoreMerge runs the host-side writes of providers.json over arbitrary files: a
// default run's repair (what was there before the run, what Cline left) and the merge-back from a
// container's and a host override run's copy (what was there, what the run left in its copy).
// None may panic, and
// whatever the file holds afterwards is either a file that somebody else wrote, byte for byte,
// or a JSON object the bridge wrote — never a corrupt write — and a merge never loses a provider
// the host file had.
func FuzzSettingsRestoreMerge(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, b, "openai-native", "m2")
		}
	}
	f.Add([]byte(`{"providers":{"a":{"settings":{"provider":"a","auth":{"accessToken":"x"}}}}}`),
		[]byte(`{"providers":{"a":{"settings":{"provider":"a","auth":{"accessToken":"y"}}}},"lastUsedProvider":"evil"}`), "a", "")
	f.Add([]byte("not json"), []byte(`{"lastUsedProvider":[1,2]}`), "", "m")
	f.Add([]byte(`{"providers":[]}`), []byte(""), "x", "y")
	f.Fuzz(func(t *testing.T, before, after []byte, provider, model string) {
		const path = "/home/u/.cline/data/settings/providers.json"
		ov := Override{Provider: provider, Model: model}
		acceptable := func(got []byte, others ...[]byte) {
			for _, o := range others {
				if bytes.Equal(got, o) {
					return
				}
			}
			if _, err := parseObject(got); err != nil {
				t.Fatalf("the bridge wrote an unusable file (%v):\n%q\nbefore %q\nafter  %q", err, got, before, after)
			}
		}
		newStore := func() (*Store, afero.Fs) {
			fs := afero.NewMemMapFs()
			if err := afero.WriteFile(fs, path, before, 0o600); err != nil {
				t.Fatal(err)
			}
			_ = fs.MkdirAll("/tmp", 0o700)
			return &Store{FS: fs, Path: path, TempDir: "/tmp"}, fs
		}

		// A default run's repair: Cline rewrote the file during the run.
		s, fs := newStore()
		run, _, err := s.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := afero.WriteFile(fs, path, after, 0o600); err != nil {
			t.Fatal(err)
		}
		_ = run.End(context.Background())
		got, err := afero.ReadFile(fs, path)
		if err != nil {
			t.Fatalf("providers.json gone after End: %v", err)
		}
		acceptable(got, after, before)

		// The merge-back: the run rewrote its private copy (a container's, a host override run's).
		for _, full := range []bool{false, true} {
			s, fs = newStore()
			cp, err := s.newCopy("", ov, full)
			if err != nil {
				continue // an unusable host file gives no copy; nothing to merge
			}
			if err := afero.WriteFile(fs, cp.SettingsPath, after, 0o600); err != nil {
				t.Fatal(err)
			}
			_ = s.MergeAllowed(context.Background(), cp, nil)
			_ = cp.Close()
			got, err = afero.ReadFile(fs, path)
			if err != nil {
				t.Fatalf("providers.json gone after the merge: %v", err)
			}
			acceptable(got, before)
			if hostDoc, err := parseObject(before); err == nil && !bytes.Equal(got, before) {
				gotDoc, _ := parseObject(got)
				if hp := hostDoc.getObject("providers"); hp != nil {
					for _, id := range hp.keys {
						if gp := gotDoc.getObject("providers"); gp == nil {
							t.Fatalf("the merge lost every provider: %q", got)
						} else if _, ok := gp.get(id); !ok {
							t.Fatalf("the merge lost provider %q: %q", id, got)
						}
					}
				}
			}
		}
	})
}
