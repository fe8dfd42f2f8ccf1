package sessions

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStore: records round-trip (0600), expire after the idle time, list most recent first, and
// hostile ids or files never name or read anything outside the directory.
func TestStore(t *testing.T) {
	s := &Store{Dir: filepath.Join(t.TempDir(), "s"), Idle: time.Hour}
	now := time.Now()
	for i, id := range []string{"1796278600502_lmK-X_cli", "b_2", "c.3"} {
		r := Record{ID: id, Tool: "ask_cline", Cwd: "/w", Created: now, LastUsed: now.Add(time.Duration(-i) * time.Minute), Turns: 1}
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get("b_2", now)
	if err != nil || got.Tool != "ask_cline" || got.Turns != 1 {
		t.Fatalf("get: %+v %v", got, err)
	}
	if fi, _ := os.Stat(filepath.Join(s.Dir, "b_2.json")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	list, bad := s.List(now)
	if len(list) != 3 || list[0].ID != "1796278600502_lmK-X_cli" || len(bad) != 0 {
		t.Errorf("list %+v %v", list, bad)
	}
	if _, err := s.Get("b_2", now.Add(2*time.Hour)); err == nil {
		t.Errorf("an idle session was still returned")
	}
	if gone := s.Expire(now.Add(2 * time.Hour)); len(gone) != 3 {
		t.Errorf("expired %d", len(gone))
	}
	for _, id := range []string{"../x", "..", "a/b", "", ".hidden", "x..y"} {
		if ValidID(id) {
			t.Errorf("ValidID(%q)", id)
		}
		if _, err := s.Get(id, now); err == nil {
			t.Errorf("Get(%q) succeeded", id)
		}
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "broken.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, bad := s.List(now); len(bad) != 1 {
		t.Errorf("a corrupt record was not reported: %v", bad)
	}
}
