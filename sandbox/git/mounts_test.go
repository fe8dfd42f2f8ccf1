package git

import (
	"reflect"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestMounts: the container's mounts come from the layout recorded before the run, and nothing
// that steers the host's git — a .git file, a git dir, the pointers in it — is ever writable in
// the container.
func TestMounts(t *testing.T) {
	main := Repo{Top: "/src/app", GitDir: "/src/app/.git", CommonDir: "/src/app/.git"}
	linked := Repo{Top: "/src/feature", GitDir: "/src/app/.git/worktrees/feature", CommonDir: "/src/app/.git"}
	ours := Repo{Top: "/tmp/wts/x-0123/wt", GitDir: "/src/app/.git/worktrees/wt", CommonDir: "/src/app/.git"}
	rw := func(p string) sandbox.Mount { return sandbox.Mount{Source: p, Target: p} }
	ro := func(p string) sandbox.Mount { return sandbox.Mount{Source: p, Target: p, ReadOnly: true} }
	// back: writable, and an engine that copies brings the run's changes back (apply only).
	back := func(p string) sandbox.Mount {
		return sandbox.Mount{Source: p, Target: p, Return: sandbox.Return{Tree: true}}
	}
	tests := []struct {
		name string
		kind WriteKind
		repo Repo
		want []sandbox.Mount
	}{
		{"apply in a main checkout", Checkout, main, []sandbox.Mount{back("/src/app"), ro("/src/app/.git")}},
		{"apply in a linked worktree", Checkout, linked, []sandbox.Mount{back("/src/feature"), ro("/src/feature/.git"), ro("/src/app/.git")}},
		{"workspace", Worktree, ours, []sandbox.Mount{rw("/tmp/wts/x-0123/wt"), ro("/tmp/wts/x-0123/wt/.git"), ro("/src/app/.git")}},
		{"ask in a repository", Analysis, main, []sandbox.Mount{ro("/src/app")}},
		{"ask in a linked worktree", Analysis, linked, []sandbox.Mount{ro("/src/feature"), ro("/src/app/.git")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Mounts(tt.kind, &tt.repo, tt.repo.Top)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got mounts\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
	if _, err := Mounts(Checkout, nil, "/src/app"); err == nil {
		t.Errorf("a writing run without a recorded layout: got mounts, want an error (never rediscover after a run)")
	}
	if ms, err := Mounts(Analysis, nil, "/src/x"); err != nil || len(ms) != 1 || !ms[0].ReadOnly {
		t.Errorf("analysis outside a repository: %+v %v", ms, err)
	}
}
