package git

import (
	"os"
	"testing"

	"github.com/cline-mcp/cline-mcp/internal/gitfixture"
)

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
