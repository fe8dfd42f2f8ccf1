package git

import (
	"fmt"
	"path/filepath"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// WriteKind is what a run may write in the repository it works in.
type WriteKind int

const (
	// Analysis writes nothing: the directory (its repository when it is in one, for history)
	// is mounted read-only (ask_cline).
	Analysis WriteKind = iota
	// Checkout writes the user's work tree, never its git dirs (apply_cline_edits); an engine
	// that copies instead of sharing brings the work tree's changes back.
	Checkout
	// Worktree writes a disposable worktree, never its .git file or the repository's git dir
	// (ask_cline_workspace).
	Worktree
)

// Mounts are what a container may see and write, at the same absolute paths as on the host, from
// the layout recorded before the first attempt (never rediscovered after one); dir is where the
// run works (used when nothing was recorded):
//   - Analysis: the recorded top (or dir) read-only, and the common dir read-only when it lies
//     outside the top (a linked worktree);
//   - Checkout and Worktree: the top read-write, its .git and every git dir read-only — no
//     commits, no config, hooks or pointers the host could later trip over, and git inside the
//     container can still read.
//
// A run that would write without a record is refused.
func Mounts(kind WriteKind, lay *Repo, dir string) ([]sandbox.Mount, error) {
	if lay == nil {
		if kind == Analysis {
			return []sandbox.Mount{{Source: dir, Target: dir, ReadOnly: true}}, nil
		}
		return nil, fmt.Errorf("no recorded repository layout for the container mounts of %s", dir)
	}
	dotgit := filepath.Join(lay.Top, ".git")
	if kind == Analysis {
		ms := []sandbox.Mount{{Source: lay.Top, Target: lay.Top, ReadOnly: true}}
		if !Within(lay.CommonDir, lay.Top) {
			ms = append(ms, sandbox.Mount{Source: lay.CommonDir, Target: lay.CommonDir, ReadOnly: true})
		}
		return ms, nil
	}
	top := sandbox.Mount{Source: lay.Top, Target: lay.Top}
	if kind == Checkout {
		top.Return = sandbox.Return{Tree: true}
	}
	ms := []sandbox.Mount{top, {Source: dotgit, Target: dotgit, ReadOnly: true}}
	if !Within(lay.CommonDir, dotgit) {
		ms = append(ms, sandbox.Mount{Source: lay.CommonDir, Target: lay.CommonDir, ReadOnly: true})
	}
	if lay.GitDir != lay.CommonDir && !Within(lay.GitDir, dotgit) && !Within(lay.GitDir, lay.CommonDir) {
		ms = append(ms, sandbox.Mount{Source: lay.GitDir, Target: lay.GitDir, ReadOnly: true})
	}
	return ms, nil
}

// Within reports whether p is dir or lies inside it (lexically).
func Within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
}
