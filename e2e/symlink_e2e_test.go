//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestDockerThroughSymlinkedPaths reproduces the macOS layout on Linux: $TMPDIR and the cwd
// are reached through a symlink (/var → /private/var there), while git reports the resolved
// top level. Paths are resolved once, so the container's working dir is inside its mounts, the
// run's edits land in the checkout, and every path reported back is the resolved one.
func TestDockerThroughSymlinkedPaths(t *testing.T) {
	e := newDockerEnv(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(e.root, link); err != nil {
		t.Fatal(err)
	}
	gitInit(t, e.work, map[string]string{"README.md": "hello\n", "sub/keep.txt": "x\n"})
	e.startWithEnv([]string{"TMPDIR=" + filepath.Join(link, "tmp")},
		"--docker-image", mcpsession.FakeImage, "--docker-network", "none")
	viaLink := filepath.Join(link, "work", "sub")
	resolved := filepath.Join(e.work, "sub")

	t.Run("apply from a symlinked subdirectory", func(t *testing.T) {
		sc, _ := dockerCall(e, "apply_cline_edits", map[string]any{"prompt": "Edit fake:edit?path=made.txt", "cwd": viaLink})
		wantDockerOK(t, sc)
		if files := mcpsession.ChangedFiles(sc); files["sub/made.txt"] != "A" {
			t.Errorf("changedFiles %v, want sub/made.txt added (the edit must land in the mounted checkout)", files)
		}
		if _, err := os.Stat(filepath.Join(resolved, "made.txt")); err != nil {
			t.Errorf("the edit did not reach the checkout: %v", err)
		}
	})
	t.Run("workspace through a symlinked TMPDIR and cwd", func(t *testing.T) {
		sc, text := dockerCall(e, "ask_cline_workspace", map[string]any{"prompt": "Where fake:probe_write", "cwd": viaLink})
		wantDockerOK(t, sc)
		wt, _ := sc["worktree"].(map[string]any)
		root, err := filepath.EvalSymlinks(filepath.Join(link, "tmp"))
		if err != nil {
			t.Fatal(err)
		}
		if p := mcpsession.Str(wt, "path"); p != "" && !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Errorf("worktree path %q, want it under the resolved TMPDIR %q", p, root)
		}
		if wt["removed"] != true {
			t.Errorf("worktree not removed: %v", wt)
		}
		// The worktree is mounted read-write: Cline's -c must be that mount, a resolved path.
		if dir, res := probedCwd(t, text); !strings.HasPrefix(dir, root) || res != "ok" {
			t.Errorf("Cline worked in %q (write: %s), want the mounted worktree under the resolved %q", dir, res, root)
		}
	})
	t.Run("ask_cline", func(t *testing.T) {
		sc, text := dockerCall(e, "ask_cline", map[string]any{"prompt": "Where fake:probe_write", "cwd": viaLink})
		wantDockerOK(t, sc)
		// ask_cline mounts the cwd read-only: a write there fails as read-only, not as missing.
		if dir, res := probedCwd(t, text); dir != resolved || !strings.Contains(res, "read-only") {
			t.Errorf("Cline worked in %q (write: %s), want the read-only mount at the resolved %q", dir, res, resolved)
		}
	})
}

// probedCwd reads fake:probe_write's report: the -c dir Cline got and the result of writing there.
func probedCwd(t *testing.T, text string) (dir, result string) {
	t.Helper()
	var r struct {
		Cwd struct{ Path, Result string } `json:"cwd"`
	}
	i := strings.Index(text, "{")
	if i < 0 || json.Unmarshal([]byte(text[i:]), &r) != nil {
		t.Fatalf("no probe report in %q", text)
	}
	return r.Cwd.Path, r.Cwd.Result
}
