// Package filetree describes a directory as a user sees it, for tests that compare two checkouts
// (a reused worktree and a fresh one, or a worktree and the repository's HEAD). It imports only
// the standard library.
package filetree

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Describe returns every path below dir — the top's .git aside — with its type and content:
// "dir", "symlink <target>" (never followed) or "file <executable> <content>".
func Describe(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".git" && d.IsDir():
			return filepath.SkipDir
		case rel == "." || rel == ".git":
			return nil
		case d.IsDir():
			out[rel] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "symlink " + target
		default:
			fi, err := d.Info()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %q", fi.Mode().Perm()&0o100 != 0, b)
		}
		return nil
	})
	return out, err
}

// Diff lists the paths whose descriptions differ, as "path: got X, want Y", sorted by path.
func Diff(got, want map[string]string) []string {
	all := maps.Clone(want)
	maps.Copy(all, got)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if got[k] != want[k] {
			out = append(out, fmt.Sprintf("%s: got %q, want %q", k, got[k], want[k]))
		}
	}
	return out
}
