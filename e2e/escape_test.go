//go:build unix

package e2e

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// Escape tests through the built server: a run plants what would make the host's git run a
// program; the server's evidence must not. Each first checks the fake's report (the attack ran),
// then that the host marker is absent, then that plain git springs the planted trap (the attack
// was live). The Docker variants are in escape_e2e_test.go.

// hostMarker is a file outside the checkout (and outside every container mount) that only a
// program run on the host can create, and the attack parameter that creates it.
func hostMarker(t *testing.T, e *env) (marker, cmdParam string) {
	t.Helper()
	marker = filepath.Join(e.root, "pwned-"+strings.ReplaceAll(t.Name(), "/", "_"))
	return marker, "cmd=" + url.QueryEscape("echo sprung >> "+marker)
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// report parses an attack scenario's JSON answer and checks its marker step.
func report(t *testing.T, sc map[string]any) map[string]any {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(mcpsession.Str(sc, "text")), &rep); err != nil {
		t.Fatalf("attack report %q: %v", sc["text"], err)
	}
	if rep["marker"] != "ok" {
		t.Fatalf("the attack did not run (marker %v): %v", rep["marker"], rep)
	}
	return rep
}

// springsForPlainGit runs git the way the evidence path used to (discovered from dir, into a
// throwaway index) and requires that it creates marker: the planted trap was live.
func springsForPlainGit(t *testing.T, dir, marker string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+filepath.Join(t.TempDir(), "index"))
	_ = cmd.Run()
	if !exists(marker) {
		t.Fatalf("plain git %v in %s did not spring the planted trap: the attack is not live, the test proves nothing", args, dir)
	}
	os.Remove(marker)
}

func TestHostApplyNestedRepoFilterNeverRuns(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hi\n", "sub/keep.txt": "keep\n"})
	marker, cmd := hostMarker(t, e)
	sub := filepath.Join(e.work, "sub")
	res, sc := e.call("apply_cline_edits", map[string]any{"prompt": "Plant fake:attack_nested_repo?" + cmd, "cwd": sub})
	mcpsession.WantOK(t, res, sc)
	nestedRepoContained(t, sc, sub, marker)
}

// nestedRepoContained checks the result of attack_nested_repo in the subdirectory sub of an
// apply_cline_edits checkout: planted, never run by the server, reported as plain files — and
// live for plain git.
func nestedRepoContained(t *testing.T, sc map[string]any, sub, marker string) {
	t.Helper()
	rep := report(t, sc)
	if rep["git_dir"] != "ok" || rep["gitattributes"] != "ok" {
		t.Fatalf("planting failed: %v", rep)
	}
	if exists(marker) {
		t.Fatalf("the server's git ran a program the run planted")
	}
	files := mcpsession.ChangedFiles(sc)
	for _, p := range []string{"sub/fake-cline-attack-attack_nested_repo.txt", "sub/.gitattributes", "sub/payload.txt"} {
		if files[p] != "A" {
			t.Errorf("changedFiles[%s] = %q, want A (all %v)", p, files[p], files)
		}
	}
	springsForPlainGit(t, sub, marker, "add", "-A")
}

func TestHostApplyRepoConfigDriversNeverRun(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hi\n"})
	marker, cmd := hostMarker(t, e)
	res, sc := e.call("apply_cline_edits", map[string]any{"prompt": "Textconv fake:attack_attributes?" + cmd})
	mcpsession.WantOK(t, res, sc)
	rep := report(t, sc)
	if rep["git_config"] != "ok" {
		t.Fatalf("on the host the run can write .git/config, but the attack says %v", rep["git_config"])
	}
	if exists(marker) {
		t.Fatalf("the server's git ran a program the run configured")
	}
	if d := mcpsession.Str(sc, "diff"); !strings.Contains(d, "+edited for the textconv attack") {
		t.Errorf("diff lacks the edit as it is on disk:\n%s", d)
	}
	springsForPlainGit(t, e.work, marker, "diff")
}
