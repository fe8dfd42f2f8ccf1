package git

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MaxDiffBytes bounds Change.Diff; a longer diff is cut and Change.Truncated is set.
const MaxDiffBytes = 1 << 20

// MaxFiles bounds Change.ChangedFiles; more files set Change.FilesTruncated.
const MaxFiles = 10000

// FileChange is one changed path between two trees.
type FileChange struct {
	// Path is the path after the change, relative to the work tree root, with "/" separators.
	Path string
	// OldPath is the path before a rename or copy, else "".
	OldPath string
	// Status is git's letter: A added, M modified, D deleted, R renamed, C copied, T type
	// changed (file ↔ symlink ↔ submodule).
	Status string
	// Binary is set when git treats either side as binary; the diff then holds a
	// "Binary files ... differ" line instead of a patch.
	Binary bool
	// Added and Deleted count lines (zero for binary files).
	Added, Deleted int
}

// RefChange is one ref that a run created, moved or deleted. Old is "" for a new ref, New is ""
// for a deleted one.
type RefChange struct {
	Name     string
	Old, New string
}

// Change is what happened to a checkout between two snapshots.
type Change struct {
	HeadBefore, HeadAfter string
	RefBefore, RefAfter   string
	// HeadMoved is set when HEAD names another commit or another branch than before.
	HeadMoved bool
	// Refs lists every ref that was created, moved or deleted, sorted by name. A new
	// refs/stash entry is listed too: it is something the user sees in `git stash list`.
	// Cline's own checkpoints (`git stash create` + `commit-tree`) create no ref and are
	// therefore never listed.
	Refs []RefChange
	// CommitCreated is the commit_created condition: HEAD moved, or a ref outside
	// refs/remotes/ was created, moved or deleted. Remote-tracking refs changed by a fetch are
	// listed in Refs but do not set it, because a fetch creates no commit of the user's.
	CommitCreated bool
	// IndexChanged is set when what is staged in the user's index differs.
	IndexChanged bool
	// Diff is the textual diff from the tree before to the tree after (binary files as
	// "Binary files ... differ"), at most MaxDiffBytes.
	Diff      string
	Truncated bool
	// ChangedFiles are the paths that differ, sorted by path, at most MaxFiles.
	ChangedFiles   []FileChange
	FilesTruncated bool
	// Undo are commands a user can run to reverse history changes (never run by us).
	// `git reset --soft` keeps the run's changes in the work tree.
	Undo []string
	// Warnings come from incomplete snapshots.
	Warnings []string
}

// Compare describes what changed between before and after, two snapshots of the same checkout.
// The diff is relative to the state before the run, so the user's own uncommitted work that
// was already there is neither lost nor attributed to the run. An error means the diff could
// not be computed (edits_inspection_failed); Compare never changes the checkout. Like Inspect it
// runs git only on before.Repo, the repository recorded before the run, and never lets a
// repository's config or attributes run a program (--no-ext-diff, --no-textconv).
func (g *Git) Compare(ctx context.Context, before, after Evidence) (Change, error) {
	c := Change{
		HeadBefore: before.Head, HeadAfter: after.Head,
		RefBefore: before.Ref, RefAfter: after.Ref,
		HeadMoved:    before.Head != after.Head || before.Ref != after.Ref,
		IndexChanged: before.Index != after.Index,
		Warnings:     append(append([]string(nil), before.Warnings...), after.Warnings...),
	}
	c.Refs = refChanges(before.Refs, after.Refs)
	c.CommitCreated = c.HeadMoved
	for _, r := range c.Refs {
		if !strings.HasPrefix(r.Name, "refs/remotes/") {
			c.CommitCreated = true
		}
	}
	c.Undo = undoHints(before, c)
	for _, n := range after.Nested {
		if !slices.Contains(before.Nested, n) {
			c.Warnings = append(c.Warnings, fmt.Sprintf("a nested git repository appeared at %q: its files are in the diff as ordinary files; its .git was not read", n))
		}
	}
	if !IsObjectID(before.Tree) || !IsObjectID(after.Tree) {
		return c, fmt.Errorf("compare %s: snapshot without a tree", after.Dir)
	}
	if before.Tree == after.Tree {
		return c, nil
	}
	if before.Repo.Top == "" {
		return c, fmt.Errorf("compare %s: no recorded repository", after.Dir)
	}
	o, _, done, err := before.Repo.Shadowed()
	if err != nil {
		return c, fmt.Errorf("compare %s: %w", after.Dir, err)
	}
	defer done()
	if c.ChangedFiles, c.FilesTruncated, err = g.DiffFiles(ctx, o, before.Tree, after.Tree); err != nil {
		return c, fmt.Errorf("compare %s: %w", after.Dir, err)
	}
	cw := &capWriter{max: MaxDiffBytes}
	o.Stdout = cw
	if _, err := g.Run(ctx, o, diffArgs(before.Tree, after.Tree, "--patch")...); err != nil {
		return c, fmt.Errorf("compare %s: %w", after.Dir, err)
	}
	c.Diff, c.Truncated = string(cw.buf), cw.truncated
	return c, nil
}

// diffArgs pins every diff option a user's config could change.
func diffArgs(from, to string, flags ...string) []string {
	args := []string{"-c", "diff.renames=true", "-c", "core.quotePath=true", "diff"}
	args = append(args, flags...)
	return append(args, "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames",
		"--src-prefix=a/", "--dst-prefix=b/", "--ignore-submodules=none", "--no-relative",
		"--end-of-options", from, to)
}

// diffFiles lists the paths that differ between two tree-ish objects, with rename detection,
// binary flags and line counts, from one `git diff --raw --numstat -z`.
func (g *Git) DiffFiles(ctx context.Context, o Opts, from, to string) ([]FileChange, bool, error) {
	out, err := g.Run(ctx, o, diffArgs(from, to, "--raw", "--numstat", "-z")...)
	if err != nil {
		return nil, false, err
	}
	files, err := parseRawNumstat(out)
	if err != nil {
		return nil, false, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	if len(files) > MaxFiles {
		return files[:MaxFiles], true, nil
	}
	return files, false, nil
}

// parseRawNumstat reads `--raw --numstat -z` output: first one raw record per path
// (":mode mode id id STATUS\0path\0[newpath\0]"), then one numstat record per path
// ("added\tdeleted\tpath\0" or "added\tdeleted\t\0old\0new\0" for renames), in the same order.
func parseRawNumstat(out []byte) ([]FileChange, error) {
	fields := bytes.Split(out, []byte{0})
	var files []FileChange
	i := 0
	for i < len(fields) && bytes.HasPrefix(fields[i], []byte(":")) {
		meta := strings.Fields(string(fields[i]))
		if len(meta) < 5 || i+1 >= len(fields) {
			return nil, fmt.Errorf("diff --raw: malformed record %q", fields[i])
		}
		st := meta[4][:1]
		fc := FileChange{Status: st, Path: string(fields[i+1])}
		i += 2
		if st == "R" || st == "C" {
			if i >= len(fields) {
				return nil, fmt.Errorf("diff --raw: rename without target")
			}
			fc.OldPath, fc.Path = fc.Path, string(fields[i])
			i++
		}
		files = append(files, fc)
	}
	for n := 0; n < len(files) && i < len(fields); n++ {
		parts := strings.SplitN(string(fields[i]), "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("diff --numstat: malformed record %q", fields[i])
		}
		i++
		if parts[2] == "" { // rename: old and new path follow as their own fields
			i += 2
		}
		if parts[0] == "-" && parts[1] == "-" {
			files[n].Binary = true
			continue
		}
		files[n].Added, _ = strconv.Atoi(parts[0])
		files[n].Deleted, _ = strconv.Atoi(parts[1])
	}
	return files, nil
}

// refChanges lists the refs that differ, sorted by name.
func refChanges(before, after map[string]string) []RefChange {
	var out []RefChange
	for name, old := range before {
		if now := after[name]; now != old {
			out = append(out, RefChange{Name: name, Old: old, New: now})
		}
	}
	for name, now := range after {
		if _, ok := before[name]; !ok {
			out = append(out, RefChange{Name: name, New: now})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// undoHints suggests commands that reverse the history changes in c. They are advice for the
// user; this package never runs them.
func undoHints(before Evidence, c Change) []string {
	var hints []string
	current := before.Ref
	if c.RefBefore != c.RefAfter {
		switch {
		case c.RefBefore != "":
			hints = append(hints, "git switch "+quote(strings.TrimPrefix(c.RefBefore, "refs/heads/")))
		case c.HeadBefore != "":
			hints = append(hints, "git switch --detach "+c.HeadBefore)
		}
		current = "" // the current branch is handled with the other refs below
	} else if c.HeadBefore != c.HeadAfter {
		if c.HeadBefore == "" {
			hints = append(hints, "git update-ref -d "+quote(current)+"  # the branch was unborn; files stay as they are")
		} else {
			hints = append(hints, "git reset --soft "+c.HeadBefore+"  # keeps the changes in the work tree")
		}
	}
	for _, r := range c.Refs {
		if r.Name == current || strings.HasPrefix(r.Name, "refs/remotes/") {
			continue
		}
		switch {
		case r.Name == "refs/stash" && r.New != "":
			hints = append(hints, "git stash pop  # restores the stashed changes")
		case r.Old == "" && strings.HasPrefix(r.Name, "refs/heads/") && !strings.HasPrefix(r.Name, "refs/heads/-"):
			hints = append(hints, "git branch -D "+quote(strings.TrimPrefix(r.Name, "refs/heads/")))
		case r.Old == "" && strings.HasPrefix(r.Name, "refs/tags/") && !strings.HasPrefix(r.Name, "refs/tags/-"):
			hints = append(hints, "git tag -d "+quote(strings.TrimPrefix(r.Name, "refs/tags/")))
		case r.Old == "":
			hints = append(hints, "git update-ref -d "+quote(r.Name))
		default:
			hints = append(hints, "git update-ref "+quote(r.Name)+" "+r.Old)
		}
	}
	return hints
}

// quote makes a ref name safe to paste into a POSIX shell.
func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
