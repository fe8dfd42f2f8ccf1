package git

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// longText is big enough for git's rename detection to pair a moved file.
var longText = strings.Repeat("a line that stays the same across the rename\n", 20)

// fileState is what a user could notice about a file without reading git's internals.
type fileState struct {
	data    []byte
	modTime time.Time
}

func stateOf(t *testing.T, paths ...string) map[string]fileState {
	t.Helper()
	m := make(map[string]fileState)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		m[p] = fileState{data, fi.ModTime()}
	}
	return m
}

func TestEvidenceCompareRunChanges(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{
		"a.txt": "one\ntwo\n", "b.txt": "bye\n", "c.txt": longText, "bin.dat": "\x00\x01\x02binary",
		"u1.txt": "user one\n", "u2.txt": "user two\n", "sub/keep.txt": "keep\n",
	})
	// The user's own uncommitted work: staged, unstaged and untracked.
	writeFile(t, filepath.Join(repo, "u1.txt"), "user one staged\n")
	gitT(t, repo, "add", "u1.txt")
	writeFile(t, filepath.Join(repo, "u2.txt"), "user two unstaged\n")
	writeFile(t, filepath.Join(repo, "user-notes.txt"), "mine\n")
	writeFile(t, filepath.Join(repo, ".gitignore"), "*.log\n")
	writeFile(t, filepath.Join(repo, "build.log"), "ignored\n")

	index := filepath.Join(repo, ".git", "index")
	watched := []string{index, filepath.Join(repo, "u1.txt"), filepath.Join(repo, "u2.txt"), filepath.Join(repo, "user-notes.txt")}
	statusBefore := gitT(t, repo, "status", "--porcelain=v2", "--untracked-files=all")
	filesBefore := stateOf(t, watched...)

	g := &Git{}
	before, err := g.Evidence(ctx, filepath.Join(repo, "sub")) // from a subdirectory
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, watched...); !reflect.DeepEqual(got, filesBefore) {
		t.Fatalf("Evidence changed the index or user files (bytes or mtime)")
	}
	if got := gitT(t, repo, "status", "--porcelain=v2", "--untracked-files=all"); got != statusBefore {
		t.Fatalf("git status after Evidence:\n%s\nwant\n%s", got, statusBefore)
	}
	if before.Dir != resolved(t, repo) {
		t.Errorf("Dir: got %q, want %q", before.Dir, resolved(t, repo))
	}
	if before.Ref != "refs/heads/main" || !IsObjectID(before.Head) || !IsObjectID(before.Tree) || before.Incomplete {
		t.Errorf("before: got ref %q head %q tree %q incomplete %v", before.Ref, before.Head, before.Tree, before.Incomplete)
	}

	again, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if CheckoutMayChange(before, again) {
		t.Errorf("CheckoutMayChange on an untouched checkout: got true, want false")
	}

	// What "Cline" does: edit, create, delete, rename, change a binary file.
	writeFile(t, filepath.Join(repo, "a.txt"), "one\ntwo\nthree\n")
	writeFile(t, filepath.Join(repo, "new.txt"), "brand new\n")
	os.Remove(filepath.Join(repo, "b.txt"))
	os.Rename(filepath.Join(repo, "c.txt"), filepath.Join(repo, "d.txt"))
	writeFile(t, filepath.Join(repo, "bin.dat"), "\x00\x01\x03binary")
	writeFile(t, filepath.Join(repo, "more.log"), "ignored too\n")

	after, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if !CheckoutMayChange(before, after) {
		t.Errorf("CheckoutMayChange after edits: got false, want true")
	}
	c, err := g.Compare(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "a.txt", Status: "M", Added: 1},
		{Path: "b.txt", Status: "D", Deleted: 1},
		{Path: "bin.dat", Status: "M", Binary: true},
		{Path: "d.txt", OldPath: "c.txt", Status: "R"},
		{Path: "new.txt", Status: "A", Added: 1},
	}
	if !reflect.DeepEqual(c.ChangedFiles, want) {
		t.Errorf("ChangedFiles:\ngot  %+v\nwant %+v", c.ChangedFiles, want)
	}
	for _, s := range []string{
		"diff --git a/a.txt b/a.txt", "+three",
		"diff --git a/b.txt b/b.txt\ndeleted file mode 100644", "-bye",
		"Binary files a/bin.dat and b/bin.dat differ",
		"rename from c.txt\nrename to d.txt",
		"new file mode 100644", "+brand new",
	} {
		if !strings.Contains(c.Diff, s) {
			t.Errorf("Diff lacks %q:\n%s", s, c.Diff)
		}
	}
	for _, s := range []string{"u1.txt", "u2.txt", "user-notes", ".gitignore", ".log"} {
		if strings.Contains(c.Diff, s) {
			t.Errorf("Diff reports the user's own change %q as the run's:\n%s", s, c.Diff)
		}
	}
	if c.CommitCreated || c.HeadMoved || len(c.Refs) > 0 || c.IndexChanged || c.Truncated || len(c.Undo) > 0 {
		t.Errorf("got commit %v moved %v refs %v index %v truncated %v undo %v, want none",
			c.CommitCreated, c.HeadMoved, c.Refs, c.IndexChanged, c.Truncated, c.Undo)
	}
	// The user's staged change is still staged and unchanged.
	if got := gitT(t, repo, "diff", "--cached", "--name-only"); got != "u1.txt" {
		t.Errorf("staged files: got %q, want u1.txt", got)
	}
}

func TestCompareHistoryChanges(t *testing.T) {
	tests := []struct {
		name       string
		run        func(t *testing.T, repo string)
		wantCommit bool
		wantRefs   []string
		wantUndo   []string // substrings; "<before>" is replaced by the old HEAD
	}{
		{
			name:       "commit on the current branch",
			run:        func(t *testing.T, repo string) { gitT(t, repo, "commit", "-q", "-am", "by cline") },
			wantCommit: true,
			wantRefs:   []string{"refs/heads/main"},
			wantUndo:   []string{"git reset --soft <before>"},
		},
		{
			name: "new branch and tag",
			run: func(t *testing.T, repo string) {
				gitT(t, repo, "branch", "feature")
				gitT(t, repo, "tag", "v1")
			},
			wantCommit: true,
			wantRefs:   []string{"refs/heads/feature", "refs/tags/v1"},
			wantUndo:   []string{"git branch -D feature", "git tag -d v1"},
		},
		{
			name:       "stash push is visible",
			run:        func(t *testing.T, repo string) { gitT(t, repo, "stash", "push", "-q") },
			wantCommit: true,
			wantRefs:   []string{"refs/stash"},
			wantUndo:   []string{"git stash pop"},
		},
		{
			name: "checkpoint objects like Cline's are not commits",
			run: func(t *testing.T, repo string) {
				stash := gitT(t, repo, "stash", "create")
				gitT(t, repo, "commit-tree", "-p", "HEAD", "-m", "checkpoint", stash+"^{tree}")
			},
		},
		{
			name: "switch to a new branch",
			run: func(t *testing.T, repo string) {
				gitT(t, repo, "switch", "-q", "-c", "topic")
			},
			wantCommit: true,
			wantRefs:   []string{"refs/heads/topic"},
			wantUndo:   []string{"git switch main", "git branch -D topic"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
			writeFile(t, filepath.Join(repo, "f.txt"), "v2\n") // dirty, as Cline leaves it
			g := &Git{}
			before, err := g.Evidence(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			tt.run(t, repo)
			after, err := g.Evidence(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			c, err := g.Compare(ctx, before, after)
			if err != nil {
				t.Fatal(err)
			}
			if c.CommitCreated != tt.wantCommit {
				t.Errorf("CommitCreated: got %v, want %v", c.CommitCreated, tt.wantCommit)
			}
			var names []string
			for _, r := range c.Refs {
				names = append(names, r.Name)
			}
			if !slices.Equal(names, tt.wantRefs) {
				t.Errorf("Refs: got %v, want %v", names, tt.wantRefs)
			}
			if c.HeadBefore != before.Head || c.HeadAfter != after.Head {
				t.Errorf("heads: got %s→%s, want %s→%s", c.HeadBefore, c.HeadAfter, before.Head, after.Head)
			}
			undo := strings.Join(c.Undo, "\n")
			for _, w := range tt.wantUndo {
				w = strings.ReplaceAll(w, "<before>", before.Head)
				if !strings.Contains(undo, w) {
					t.Errorf("Undo lacks %q: got %q", w, c.Undo)
				}
			}
			if !tt.wantCommit && CheckoutMayChange(before, after) {
				t.Errorf("CheckoutMayChange: got true, want false")
			}
		})
	}
}

func TestCommitMovesHeadFromOldToNew(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "f.txt"), "v2\n")
	gitT(t, repo, "commit", "-q", "-am", "by cline")
	after, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Compare(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	newHead := gitT(t, repo, "rev-parse", "HEAD")
	if !c.CommitCreated || !c.HeadMoved || c.HeadAfter != newHead || c.HeadBefore != before.Head || c.HeadBefore == newHead {
		t.Errorf("got created %v moved %v %s→%s, want a move to %s", c.CommitCreated, c.HeadMoved, c.HeadBefore, c.HeadAfter, newHead)
	}
	// The committed edit is still part of the run's diff: the tree moved with it.
	if !reflect.DeepEqual(c.ChangedFiles, []FileChange{{Path: "f.txt", Status: "M", Added: 1, Deleted: 1}}) {
		t.Errorf("ChangedFiles: got %+v", c.ChangedFiles)
	}
}

func TestEvidenceUnbornHead(t *testing.T) {
	ctx := t.Context()
	repo := t.TempDir()
	gitT(t, repo, "init", "-q")
	writeFile(t, filepath.Join(repo, "pre.txt"), "user\n")
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if before.Head != "" || before.Ref != "refs/heads/main" || !IsObjectID(before.Tree) {
		t.Fatalf("unborn: got head %q ref %q tree %q", before.Head, before.Ref, before.Tree)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "index")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Evidence created the index of a fresh repository: %v", err)
	}
	writeFile(t, filepath.Join(repo, "new.txt"), "x\n")
	gitT(t, repo, "add", "new.txt")
	gitT(t, repo, "commit", "-q", "-m", "first")
	after, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Compare(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	if !c.CommitCreated || c.HeadBefore != "" || c.HeadAfter == "" {
		t.Errorf("got created %v %q→%q, want a first commit", c.CommitCreated, c.HeadBefore, c.HeadAfter)
	}
	if !reflect.DeepEqual(c.ChangedFiles, []FileChange{{Path: "new.txt", Status: "A", Added: 1}}) {
		t.Errorf("ChangedFiles: got %+v", c.ChangedFiles)
	}
	if want := "git update-ref -d refs/heads/main"; len(c.Undo) == 0 || !strings.HasPrefix(c.Undo[0], want) {
		t.Errorf("Undo: got %q, want prefix %q", c.Undo, want)
	}
}

func TestEvidenceIncompleteWhenFilesUnreadable(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	// `git add` failing twice is what files that keep vanishing (or cannot be read) look like.
	adds := 0
	g := &Git{Command: func(ctx context.Context, name string, args ...string) *exec.Cmd {
		if slices.Contains(args, "add") {
			adds++
			return exec.CommandContext(ctx, name, "-c", "core.hooksPath=/dev/null", "hash-object", "--", "does-not-exist")
		}
		return exec.CommandContext(ctx, name, args...)
	}}
	ev, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Incomplete || len(ev.Warnings) != 1 || !IsObjectID(ev.Tree) || adds != 2 {
		t.Errorf("got incomplete %v warnings %q tree %q after %d adds, want incomplete with a tree after 2 adds",
			ev.Incomplete, ev.Warnings, ev.Tree, adds)
	}
	if !CheckoutMayChange(ev, ev) {
		t.Errorf("CheckoutMayChange with an incomplete snapshot: got false, want true")
	}
}

func TestCompareDiffIsBounded(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, nil)
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "big.txt"), strings.Repeat("0123456789abcdef\n", 100_000)) // 1.7 MB
	after, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Compare(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated || len(c.Diff) != MaxDiffBytes {
		t.Errorf("got truncated %v len %d, want true %d", c.Truncated, len(c.Diff), MaxDiffBytes)
	}
	if !reflect.DeepEqual(c.ChangedFiles, []FileChange{{Path: "big.txt", Status: "A", Added: 100_000}}) {
		t.Errorf("ChangedFiles: got %+v", c.ChangedFiles)
	}
}

func TestEvidenceSubmoduleStaysGitlink(t *testing.T) {
	ctx := t.Context()
	sub := newRepo(t, map[string]string{"s.txt": "sub\n"})
	repo := newRepo(t, map[string]string{"f.txt": "v1\n"})
	gitT(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "mod")
	gitT(t, repo, "commit", "-q", "-m", "add submodule")
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "mod", "inside.txt"), "untracked inside the submodule\n")
	after, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if before.Tree != after.Tree {
		t.Errorf("Tree changed for a file inside a submodule: the submodule was not kept as a gitlink")
	}
	if before.Submodules == after.Submodules || !CheckoutMayChange(before, after) {
		t.Errorf("the dirty submodule is not visible in Submodules/CheckoutMayChange")
	}
	if got := gitT(t, filepath.Join(repo, "mod"), "status", "--porcelain"); got != "?? inside.txt" {
		t.Errorf("submodule status: got %q, want the untracked file untouched", got)
	}
}

// TestEvidenceKeepsBuiltinConversions: the snapshot drops filter programs, not git's built-in
// conversions, so in a repository that stores LF and checks out CRLF the diff of an honest run
// is the lines it changed, not the whole file.
func TestEvidenceKeepsBuiltinConversions(t *testing.T) {
	ctx := t.Context()
	repo := newRepo(t, map[string]string{".gitattributes": "*.txt text eol=crlf\n", "a.txt": "one\ntwo\n"})
	gitT(t, repo, "config", "core.autocrlf", "true")
	os.Remove(filepath.Join(repo, "a.txt"))
	gitT(t, repo, "checkout", "--", "a.txt") // now CRLF on disk, LF in the index
	if data, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(data) != "one\r\ntwo\r\n" {
		t.Fatalf("checkout: got %q, want CRLF", data)
	}
	g := &Git{}
	before, err := g.Evidence(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "a.txt"), "one\r\ntwo\r\nthree\r\n")
	after, err := g.Inspect(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Compare(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.ChangedFiles, []FileChange{{Path: "a.txt", Status: "M", Added: 1}}) || strings.Contains(c.Diff, "\r") {
		t.Errorf("got %+v\n%q\nwant one added line, stored as LF", c.ChangedFiles, c.Diff)
	}
}
