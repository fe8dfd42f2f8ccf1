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

// TestReproducibleSnapshot: two goreleaser snapshot builds of HEAD, each in its own fresh clone
// (another directory, another dist), give byte-identical binaries for every target. It runs
// goreleaser twice, so only with CLINE_MCP_RELEASE_TEST=1 (make release-check, run by CI).
func TestReproducibleSnapshot(t *testing.T) {
	if os.Getenv("CLINE_MCP_RELEASE_TEST") != "1" {
		t.Skip("set CLINE_MCP_RELEASE_TEST=1 (make release-check): builds every release target twice")
	}
	root, _ := filepath.Abs("..")
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(head)) // both builds of this one commit, whatever HEAD does meanwhile
	var sums []map[string]string
	for i := range 2 {
		clone := filepath.Join(t.TempDir(), "clone"+string(rune('a'+i)))
		run(t, root, "git", "clone", "-q", "--no-hardlinks", root, clone)
		run(t, clone, "git", "checkout", "-q", "--detach", commit)
		run(t, clone, "go", "tool", "-modfile=tools/go.mod", "goreleaser", "build", "--snapshot", "--clean")
		sums = append(sums, binarySums(t, filepath.Join(clone, "dist")))
	}
	if len(sums[0]) != 6 {
		t.Fatalf("found %d binaries in the first build, want 6 (linux, darwin, windows × amd64, arm64): %v", len(sums[0]), sums[0])
	}
	for name, sum := range sums[0] {
		if sums[1][name] != sum {
			t.Errorf("%s differs between two builds of one commit: %s vs %s", name, sum, sums[1][name])
		}
	}
	t.Logf("%d binaries of %s identical across two builds", len(sums[0]), commit)
}

func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
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
