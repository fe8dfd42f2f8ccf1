package settings

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

func realStore(t testing.TB) *Store {
	t.Helper()
	root := t.TempDir()
	tmp := filepath.Join(root, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	return &Store{FS: afero.NewOsFs(), Path: filepath.Join(root, "data", "settings", "providers.json"), TempDir: tmp}
}

func writeReal(t testing.TB, path string, data []byte, mode os.FileMode) {
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
	run, warns := begin(t, s)
	checkWarnings(t, warns, nil)
	writeReal(t, s.Path, testdata(t, "a_text_pong.after.json"), 0o600)
	fiBefore, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	checkWarnings(t, run.End(context.Background()), nil)
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

func TestRealFSRepairWritesAtomically0600(t *testing.T) {
	s := realStore(t)
	s.LockPath = LockPath(s.Path)
	writeReal(t, s.Path, testdata(t, "o_invalid_providers_json_entry.before.json"), 0o644)
	run, warns := begin(t, s)
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
	if want := testdata(t, "o_invalid_providers_json_entry.before.json"); string(copyData) != string(want) {
		t.Errorf("got private copy\n%s\nwant\n%s", copyData, want)
	}

	writeReal(t, s.Path, testdata(t, "o_invalid_providers_json_entry.after.json"), 0o644)
	fiCline, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	checkWarnings(t, run.End(context.Background()), []string{"dropped provider(s)"})
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
	if want := testdata(t, "golden/invalid_entry_wipe.json"); string(got) != string(want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	entries, err := os.ReadDir(filepath.Dir(s.Path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "providers.json,providers.json.lock" {
		t.Errorf("got %v in the settings dir, want providers.json and the lock file only", names)
	}
	if backups, _ := filepath.Glob(filepath.Join(s.TempDir, "*")); len(backups) != 0 {
		t.Errorf("got leftovers %v in the temp dir, want none", backups)
	}
}

// TestRealFSHostCopyNoFileBefore: an override run where the user has no providers.json: the CLI
// creates one in the copy, and the user still has none afterwards.
func TestRealFSHostCopyNoFileBefore(t *testing.T) {
	s := realStore(t)
	s.LockPath = LockPath(s.Path)
	c, err := s.HostCopy("", Override{"cline", "x"})
	if err != nil {
		t.Fatal(err)
	}
	writeReal(t, c.SettingsPath, testdata(t, "o_no_providers_json.after.json"), 0o644)
	checkWarnings(t, s.MergeAllowed(context.Background(), c, nil), nil)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(s.Path)); !os.IsNotExist(err) {
		t.Errorf("the user's settings dir was created (%v); an override run must leave no trace", err)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("the copy %s outlived Close (%v)", c.Dir, err)
	}
}
