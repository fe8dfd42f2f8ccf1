package worktree

import (
	"context"
	"path/filepath"
	"strings"
)

// Layout is where a work tree's git data lives, for callers that must mount it (the Docker
// sandbox mounts the work tree read-write and the shared git dir read-only).
type Layout struct {
	Top       string // work tree root
	GitDir    string // this work tree's git dir (".git", or <common>/worktrees/<name> for a linked worktree)
	CommonDir string // the git dir shared by all work trees of the repository
}

// Layout resolves dir's repository layout. It returns an error wrapping ErrNotGit when dir is
// not inside a work tree.
func (g *Git) Layout(ctx context.Context, dir string) (Layout, error) {
	info, err := g.inspect(ctx, dir)
	if err != nil {
		return Layout{}, err
	}
	out, err := g.run(ctx, runOpts{dir: dir}, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return Layout{}, err
	}
	gitDir := filepath.Clean(strings.TrimSpace(string(out)))
	return Layout{Top: info.top, GitDir: gitDir, CommonDir: info.commonDir}, nil
}
