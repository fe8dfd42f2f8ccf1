package worktree

import (
	"os"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/gitfixture"
)

// testHome is the HOME of the package's tests, removed after the last test (benchmarks cache
// their generated repositories in it).
var testHome string

// TestMain isolates every git call (ours and the helpers') from the machine's git config.
func TestMain(m *testing.M) { os.Exit(gitfixture.Main(m, &testHome)) }

var (
	gitT      = gitfixture.Git
	gitRaw    = gitfixture.Raw
	writeFile = gitfixture.WriteFile
	newRepo   = gitfixture.NewRepo
	resolved  = gitfixture.Resolved
)

// worktreePaths lists the worktrees git knows for repo.
func worktreePaths(t testing.TB, repo string) []string {
	t.Helper()
	var paths []string
	for _, line := range strings.Split(gitT(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			paths = append(paths, p)
		}
	}
	return paths
}
