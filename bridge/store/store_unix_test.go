//go:build unix

package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestPlantedFilesRefused: what a container session could plant in the directory — a FIFO, a
// symbolic link to a record outside or inside, a directory — under a record's name is refused by
// Get, reported by List, left alone by Expire, and nothing hangs.
func TestPlantedFilesRefused(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "recs")
	s := newStore(dir)
	if err := s.Put(rec{ID: "real", At: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(base, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"id":"out","n":42}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A link inside the directory, to a file that holds a record of the link's own id: only the
	// refusal of links stops it (os.Root keeps it inside, the ids match).
	if err := os.WriteFile(filepath.Join(dir, "planted"), []byte(`{"id":"in","n":42}`), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(p string) error{
		"fifo":   func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"out":    func(p string) error { return os.Symlink(secret, p) },
		"in":     func(p string) error { return os.Symlink("planted", p) },
		"folder": func(p string) error { return os.Mkdir(p, 0o700) },
	}
	for id, f := range plant {
		if err := f(filepath.Join(dir, id+".json")); err != nil {
			t.Fatal(err)
		}
	}
	// Markers: the planted files are there and a naive read would follow the links.
	if fi, err := os.Lstat(filepath.Join(dir, "fifo.json")); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the FIFO was not planted: %v %v", fi, err)
	}
	for _, id := range []string{"out", "in"} {
		if b, err := os.ReadFile(filepath.Join(dir, id+".json")); err != nil || len(b) == 0 {
			t.Fatalf("the link %s leads nowhere, the test would prove nothing: %v", id, err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := range plant {
			if r, err := s.Get(id); err == nil {
				t.Errorf("Get(%q) read a planted file: %+v", id, r)
			}
		}
		if list, bad := s.List(); len(list) != 1 || len(bad) != len(plant) {
			t.Errorf("List: %d records, bad %v; want the real one and %d refusals", len(list), bad, len(plant))
		}
		if gone := s.Expire(time.Now(), time.Minute, nil); len(gone) != 1 || gone[0].ID != "real" {
			t.Errorf("Expire: %+v, want only the real record", gone)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("reading the planted files hung")
	}
	if _, err := os.ReadFile(secret); err != nil {
		t.Errorf("the link's target was touched: %v", err)
	}
}
