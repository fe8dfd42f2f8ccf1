//go:build unix

package run

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSessionMountsReplacePlantedSettings: what an earlier container of a session left at its
// data dir's settings/ — a link to a host directory, a FIFO — is removed without being followed,
// and a directory of the host's own takes its place; the link's target is untouched.
func TestSessionMountsReplacePlantedSettings(t *testing.T) {
	for _, kind := range []string{"link", "fifo"} {
		t.Run(kind, func(t *testing.T) {
			data, outside := t.TempDir(), t.TempDir()
			target := filepath.Join(data, "settings")
			var err error
			if kind == "link" {
				err = os.Symlink(outside, target)
			} else {
				err = syscall.Mkfifo(target, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(target); err != nil || fi.IsDir() {
				t.Fatalf("the %s was not planted: %v", kind, err)
			}
			if _, err := sessionMounts(data, t.TempDir()); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(target); err != nil || !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
				t.Errorf("settings/ is not a directory of the host's own: %v %v", fi, err)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("the link's target was written: %v", ents)
			}
		})
	}
}
