// Package gitfixture is the test helpers of the packages that run git (sandbox/git,
// sandbox/worktree): a git config of their own for the whole test binary, and real repositories
// in temp dirs made the way a user makes them.
package gitfixture

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Main isolates every git call of a test binary (the code's and the helpers') from the machine's
// git config: a HOME and global config of its own (default branch main, file protocol allowed),
// removed after m.Run. It returns the exit code and is called from TestMain; home is where the
// binary's HOME is while it runs.
func Main(m *testing.M, home *string) int {
	dir, err := os.MkdirTemp("", "git-test-home-*")
	if err != nil {
		panic(err)
	}
	*home = dir
	global := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(global, []byte("[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n"), 0o600); err != nil {
		panic(err)
	}
	os.Setenv("GIT_CONFIG_GLOBAL", global)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Setenv("HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	return code
}

// Git runs the real git as a user would (hooks on, identity set) but never refreshes the index
// by accident, and fails the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := Raw(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// Raw runs git like Git and returns its combined output and error.
func Raw(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_OPTIONAL_LOCKS=0")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}

// WriteFile writes content to path, making its directories.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// NewRepo creates a repository with one commit of files.
func NewRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	Git(t, dir, "init", "-q")
	for name, content := range files {
		WriteFile(t, filepath.Join(dir, name), content)
	}
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "--allow-empty", "-m", "initial")
	return dir
}

// Resolved returns p with symlinks resolved, as git reports paths (t.TempDir may be a symlink).
func Resolved(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
