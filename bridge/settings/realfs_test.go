package settings

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/spf13/afero"
)

func realStore(t *testing.T) *Store {
	t.Helper()
	root := t.TempDir()
	tmp := filepath.Join(root, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	return &Store{FS: afero.NewOsFs(), Path: filepath.Join(root, "data", "settings", "providers.json"), TempDir: tmp}
}

func writeReal(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// Like the CLI: a new file renamed into place, so the inode changes with every run.
	tmp := path + ".cli.tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestRealFSNoChangeNoWrite(t *testing.T) {
	s := realStore(t)
	writeReal(t, s.Path, testdata(t, "a_text_pong.before.json"), 0o644)
	run, warns := s.Begin(Override{Model: "fake-model"})
	checkWarnings(t, warns, nil)
	writeReal(t, s.Path, testdata(t, "a_text_pong.after.json"), 0o600)
	fiBefore, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	checkWarnings(t, run.End(), nil)
	fiAfter, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(fiBefore, fiAfter) {
		t.Error("got a new inode, want the file Cline wrote left alone")
	}
	if !fiAfter.ModTime().Equal(fiBefore.ModTime()) {
		t.Errorf("got mtime %v, want %v", fiAfter.ModTime(), fiBefore.ModTime())
	}
}

func TestRealFSRestoreWritesAtomically0600(t *testing.T) {
	s := realStore(t)
	writeReal(t, s.Path, testdata(t, "o_provider_override.before.json"), 0o644)
	run, warns := s.Begin(Override{"openai-native", "gpt-fake"})
	checkWarnings(t, warns, nil)

	// While the run is going, the private pre-run copy exists and is private.
	backups, err := filepath.Glob(filepath.Join(s.TempDir, "cline-mcp-settings-backup-*"))
	if err != nil || len(backups) != 1 {
		t.Fatalf("got backups %v (%v), want one", backups, err)
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]os.FileMode{backups[0]: 0o700, filepath.Join(backups[0], "providers.json"): 0o600} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("%s: got mode %v, want %v", path, got, want)
			}
		}
	}
	copyData, err := os.ReadFile(filepath.Join(backups[0], "providers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := testdata(t, "o_provider_override.before.json"); string(copyData) != string(want) {
		t.Errorf("got private copy\n%s\nwant\n%s", copyData, want)
	}

	writeReal(t, s.Path, testdata(t, "o_provider_override.after.json"), 0o644)
	fiCline, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	checkWarnings(t, run.End(), nil)
	fi, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(fi, fiCline) {
		t.Error("got the same inode, want a new file renamed into place")
	}
	if runtime.GOOS != "windows" {
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("got mode %v, want 0600", got)
		}
	}
	got, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if want := testdata(t, "golden/provider_override.json"); string(got) != string(want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	entries, err := os.ReadDir(filepath.Dir(s.Path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("got %d entries in the settings dir, want only providers.json", len(entries))
	}
	if backups, _ := filepath.Glob(filepath.Join(s.TempDir, "*")); len(backups) != 0 {
		t.Errorf("got leftovers %v in the temp dir, want none", backups)
	}
}

// TestRealFSNoFileBefore: Cline created the file during an override run; only lastUsedProvider goes back (to absent).
func TestRealFSNoFileBefore(t *testing.T) {
	s := realStore(t)
	run, _ := s.Begin(Override{"lmstudio", "m"})
	writeReal(t, s.Path, testdata(t, "o_no_providers_json.after.json"), 0o644)
	checkWarnings(t, run.End(), nil)
	got, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseObject(got)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.get("lastUsedProvider"); ok {
		t.Error("got lastUsedProvider, want it absent again as before the run")
	}
}
