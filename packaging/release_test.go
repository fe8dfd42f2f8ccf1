package packaging

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReproducibleSnapshot: goreleaser snapshot builds of one commit, each in its own fresh clone
// (another directory, another dist), give byte-identical binaries: two full builds (every target)
// sharing the build cache, and a third of the host's target with an empty build cache, so that
// nothing of the first builds is reused. It runs goreleaser three times, so only with
// CLINE_MCP_RELEASE_TEST=1 (make release-check, run by CI).
func TestReproducibleSnapshot(t *testing.T) {
	if os.Getenv("CLINE_MCP_RELEASE_TEST") != "1" {
		t.Skip("set CLINE_MCP_RELEASE_TEST=1 (make release-check): builds every release target twice")
	}
	root, _ := filepath.Abs("..")
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(head)) // every build of this one commit, whatever HEAD does meanwhile
	goreleaser := filepath.Join(t.TempDir(), "goreleaser")
	run(t, root, nil, "go", "build", "-modfile=tools/go.mod", "-o", goreleaser, "github.com/goreleaser/goreleaser/v2")
	build := func(env []string, args ...string) map[string]string {
		clone := filepath.Join(t.TempDir(), "clone")
		run(t, root, nil, "git", "clone", "-q", "--no-hardlinks", root, clone)
		run(t, clone, nil, "git", "checkout", "-q", "--detach", commit)
		run(t, clone, env, goreleaser, append([]string{"build", "--snapshot", "--clean"}, args...)...)
		return binarySums(t, filepath.Join(clone, "dist"))
	}
	a, b := build(nil), build(nil)
	if len(a) != 6 {
		t.Fatalf("found %d binaries in the first build, want 6 (linux, darwin, windows × amd64, arm64): %v", len(a), a)
	}
	for name, sum := range a {
		if b[name] != sum {
			t.Errorf("%s differs between two builds of one commit: %s vs %s", name, sum, b[name])
		}
	}
	cold := build([]string{"GOCACHE=" + t.TempDir()}, "--single-target")
	if len(cold) != 1 {
		t.Fatalf("the single-target build made %v", cold)
	}
	for name, sum := range cold {
		if a[name] != sum {
			t.Errorf("%s built with an empty build cache differs: %s vs %s", name, sum, a[name])
		}
	}
	t.Logf("%d binaries of %s identical across two builds; %v identical with an empty build cache", len(a), commit, cold)
}

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// binarySums are the SHA-256 of every cline-mcp binary under dist, by path inside dist.
func binarySums(t *testing.T, dist string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dist, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (d.Name() != "cline-mcp" && d.Name() != "cline-mcp.exe") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		rel, _ := filepath.Rel(dist, p)
		sums[filepath.ToSlash(rel)] = hex.EncodeToString(h[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}
