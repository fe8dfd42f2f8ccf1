package run

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// TestStoreIsSettings: *settings.Store is the runner's Settings as it is: a copy names its files and
// provider, merges back through the store or under a hold, and Discard deletes it; the user's file
// is untouched.
func TestStoreIsSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings", "providers.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	doc := `{"version":1,"lastUsedProvider":"openai","providers":{"openai":{"settings":{"apiKey":"k1"}},"anthropic":{"settings":{"apiKey":"k2"}}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var s Settings = &settings.Store{FS: afero.NewOsFs(), Path: path, TempDir: dir}
	if s.File() != path {
		t.Errorf("File %q", s.File())
	}
	hold, _, err := s.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pc, err := s.PrivateCopy(t.TempDir(), settings.Override{})
	if err != nil {
		t.Fatal(err)
	}
	if pc.Target != "openai" || filepath.Dir(filepath.Dir(pc.SettingsPath)) != pc.Dir {
		t.Errorf("private copy: target %q, settings %q in %q", pc.Target, pc.SettingsPath, pc.Dir)
	}
	if b, err := s.ReadBack(pc); err != nil || !strings.Contains(string(b), "k1") || strings.Contains(string(b), "k2") {
		t.Errorf("read back %s %v", b, err)
	}
	_ = s.MergeAllowed(t.Context(), pc, hold)
	if err := s.Discard(pc); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pc.Dir); !os.IsNotExist(err) {
		t.Errorf("copy not deleted: %v", err)
	}
	_ = s.End(t.Context(), hold)

	hc, err := s.HostCopy(t.TempDir(), settings.Override{Provider: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	if hc.Target != "anthropic" {
		t.Errorf("host copy target %q", hc.Target)
	}
	_ = s.MergeAllowed(t.Context(), hc, nil)
	if err := s.Discard(hc); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != doc {
		t.Errorf("the user's file changed: %s %v", b, err)
	}
}

// TestManagedWorktreesAdapter: the adapter's worktree is the manager's, recorded at creation,
// and Release removes it.
func TestManagedWorktreesAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("runs git")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	m := &worktree.Manager{Git: &git.Git{}, Root: filepath.Join(t.TempDir(), "worktrees")}
	wts := ManagedWorktrees(m)
	wt, err := wts.Acquire(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	info := wt.Info()
	if info.Commit == "" || info.Repo.Top != info.Path || info.Reused {
		t.Errorf("info %+v", info)
	}
	if err := os.WriteFile(filepath.Join(info.Path, "new.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	touched, err := wt.Touched(t.Context())
	if err != nil || len(touched) != 1 || touched[0].Path != "new.txt" {
		t.Errorf("touched %+v %v", touched, err)
	}
	rel, err := wt.Release(t.Context())
	if err != nil || rel.Pooled {
		t.Errorf("release %+v %v", rel, err)
	}
	if _, err := os.Stat(info.Path); !os.IsNotExist(err) {
		t.Errorf("worktree not removed: %v", err)
	}
	if _, err := wts.Acquire(t.Context(), t.TempDir()); err == nil {
		t.Errorf("Acquire outside a repository succeeded")
	}
}
