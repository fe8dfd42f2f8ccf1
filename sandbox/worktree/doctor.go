package worktree

import (
	"os"
	"path/filepath"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// DoctorCheck is doctor's line on the worktree root (DefaultRootName in the temporary directory
// when root is ""): a root the server would not trust (not a private 0700 directory of this
// user) fails, since ask_cline_workspace then fails and the sweeper leaves it alone.
func DoctorCheck(root string) sandbox.Check {
	m := &Manager{Root: root}
	if err := m.CheckRoot(); err != nil {
		return sandbox.Check{Name: "worktree root", Detail: err.Error(), Fix: "chmod 700 the directory (or remove it; the server recreates it), or pass --worktree-root DIR"}
	}
	if root == "" {
		root = filepath.Join(os.TempDir(), DefaultRootName)
	}
	return sandbox.Check{Name: "worktree root", OK: true, Detail: root + " (private to this user, or created on first use)"}
}
