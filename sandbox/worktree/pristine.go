package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// slot is a worktree kept for the pool: what was recorded when it was created (before any run)
// and after its last preparation. It is idle in the pool or owned by one Worktree handle.
//
// Its index is private: git.Repo.Index is entry/index, beside the work tree, never mounted into a
// container and never handed to Cline. Its stat data is what the pool trusts when it checks
// that the files equal the commit (a changed file also changes its ctime, which nobody can set
// back); the worktree's own index in its git dir, which git run by Cline reads (and in host
// mode may rewrite), is overwritten with a copy before each call.
type slot struct {
	path, entry string
	repo        git.Repo
	dotgit      []byte            // the .git file as created
	top         fs.FileInfo       // the work tree's directory as created
	meta        map[string]string // the worktree's git dir after our last write, index aside
	commit      string            // what the files and the private index are at
	tree        string            // commit's tree
	gitlinks    []string          // commit's submodule paths
	attrs       []string          // commit's tracked .gitattributes files
	found       []Finding         // what the last prepare found and removed or repaired
	noShapes    bool              // benchmarks: scrub as before the shape checks (see tidy)
}

// poolConfig is prepended to every git command on a pooled worktree: a file whose content
// changed must never pass as unchanged because of a config that trusts stat data less.
var poolConfig = []string{"-c", "core.trustctime=true", "-c", "core.checkStat=default"}

// newSlot records a worktree create just made (nothing has run in it) for the pool.
func (m *Manager) newSlot(ctx context.Context, wt *Worktree) (*slot, error) {
	s := &slot{path: wt.Path, entry: wt.entry, repo: wt.Repo}
	s.repo.Index = filepath.Join(wt.entry, "index")
	if err := git.CopyIndex(wt.Repo.Index, s.repo.Index); err != nil {
		return nil, fmt.Errorf("private index: %w", err)
	}
	var err error
	if s.dotgit, err = git.ReadSmall(filepath.Join(wt.Path, ".git")); err != nil {
		return nil, err
	}
	if s.top, err = os.Lstat(wt.Path); err != nil {
		return nil, err
	}
	o, done, err := s.opts()
	if err != nil {
		return nil, err
	}
	defer done()
	if err := s.describe(ctx, m.git(), o, wt.Commit); err != nil {
		return nil, err
	}
	s.meta, err = manifest(s.repo.GitDir)
	return s, err
}

// handle gives the slot to one caller.
func (s *slot) handle(m *Manager) *Worktree {
	return &Worktree{Path: s.path, Commit: s.commit, Repo: s.repo, m: m, entry: s.entry, slot: s, top: s.top.Mode()}
}

// describe records commit and what the pool needs to know of it, from the private index,
// which holds exactly commit.
func (s *slot) describe(ctx context.Context, g *git.Git, o git.Opts, commit string) error {
	out, err := g.Run(ctx, o, "rev-parse", "--verify", "-q", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return err
	}
	s.commit, s.tree = commit, strings.TrimSpace(string(out))
	stage, err := g.Run(ctx, o, "ls-files", "--stage", "-z")
	if err != nil {
		return err
	}
	s.gitlinks, s.attrs = git.Gitlinks(stage), nil
	for rec := range bytes.SplitSeq(stage, []byte{0}) {
		if i := bytes.IndexByte(rec, '\t'); i >= 0 && path.Base(string(rec[i+1:])) == ".gitattributes" {
			s.attrs = append(s.attrs, string(rec[i+1:]))
		}
	}
	return nil
}

// check compares what a run could have changed of the slot's git metadata with the record: the
// work tree's directory, its .git file, every file of the worktree's git dir (HEAD, gitdir,
// commondir, logs, no config or hooks that were not there) but the index, and our entry dir.
// Anything unexpected is an error: the slot is then removed, never repaired.
func (s *slot) check() error {
	fi, err := os.Lstat(s.path)
	if err != nil {
		return fmt.Errorf("the work tree: %w", err)
	}
	if !os.SameFile(fi, s.top) || fi.Mode() != s.top.Mode() {
		return errors.New("the work tree's directory was replaced or its mode changed")
	}
	if b, err := git.ReadSmall(filepath.Join(s.path, ".git")); err != nil || !bytes.Equal(b, s.dotgit) {
		return errors.New("the work tree's .git file changed")
	}
	meta, err := manifest(s.repo.GitDir)
	if err != nil {
		return fmt.Errorf("the worktree's git dir: %w", err)
	}
	if d := manifestDiff(s.meta, meta); d != "" {
		return fmt.Errorf("the worktree's git dir %s changed: %s", s.repo.GitDir, d)
	}
	list, err := os.ReadDir(s.entry)
	if err != nil {
		return err
	}
	for _, de := range list {
		if !slices.Contains([]string{"owner.json", "wt", "index"}, de.Name()) {
			return fmt.Errorf("unexpected %s in %s", de.Name(), s.entry)
		}
	}
	return nil
}

// prepare turns an idle slot into a pristine worktree of commit for the next call, crossing the
// trust boundary like Touched: it checks the recorded metadata first, and runs git only pinned
// to the record, in a shadow git dir with the data-only settings src has now (no filter, hook
// or other program; attributes are the commit's, see scrub), on the private index. Untracked,
// ignored and planted files are deleted through an os.Root of the work tree, so no symlink the
// run planted is followed. Only files that differ from commit are rewritten (read-tree --reset
// -u). It ends with a verification (nothing untracked or ignored, no planted .git, every
// tracked file as in commit per a refresh of trusted stat data and content, the index's tree is
// commit's) and installs a copy of the private index and HEAD in the worktree's git dir.
func (m *Manager) prepare(ctx context.Context, s *slot, src git.Repo, commit string) error {
	if err := s.check(); err != nil {
		return err
	}
	if !git.IsObjectID(commit) {
		return fmt.Errorf("%w %q: not an object id", git.ErrBadRef, commit)
	}
	s.repo.Adopt(src)
	g := m.git()
	o, done, err := s.opts()
	if err != nil {
		return err
	}
	defer done()
	root, err := os.OpenRoot(s.path)
	if err != nil {
		return err
	}
	defer root.Close()
	s.found = nil
	found, dirty, err := s.scrub(ctx, g, o, root)
	if err != nil {
		return err
	}
	s.found = found
	if dirty || commit != s.commit {
		if _, err := g.Run(ctx, o, poolArgs("read-tree", "--reset", "-u", "--end-of-options", commit)...); err != nil {
			return err
		}
		if err := s.describe(ctx, g, o, commit); err != nil {
			return err
		}
		if found, dirty, err = s.scrub(ctx, g, o, root); err != nil {
			return err
		}
		if dirty || len(found) > 0 {
			return fmt.Errorf("the work tree is not pristine after the reset %v", found)
		}
	}
	out, err := g.Run(ctx, o, poolArgs("write-tree")...)
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(string(out)); got != s.tree {
		return fmt.Errorf("the index holds tree %s, want %s of %s", got, s.tree, commit)
	}
	if err := replaceFile(filepath.Join(s.repo.GitDir, "HEAD"), func(f *os.File) error {
		_, err := io.WriteString(f, commit+"\n")
		return err
	}); err != nil {
		return err
	}
	if err := s.installIndex(); err != nil {
		return err
	}
	s.meta, err = manifest(s.repo.GitDir)
	return err
}

// scrub removes what does not belong in the work tree and reports what git would not have
// seen (see tidy) and whether it found anything — a removed entry or a tracked file that
// differs from the private index — which needs a reset. A planted .git is an error (see tidy);
// otherwise it removes
//   - anything inside submodule directories, which git does not look into;
//   - FIFOs, sockets, devices and hard links (tracked files come back from the reset), and sets
//     files and directories with other permission bits than a checkout gives back to those;
//   - every untracked and ignored file and directory (ls-files --others --directory, no
//     excludes);
//   - tracked .gitattributes are rewritten from the index first, so the refresh compares
//     content with the commit's attributes, not the run's.
func (s *slot) scrub(ctx context.Context, g *git.Git, o git.Opts, root *os.Root) ([]Finding, bool, error) {
	// tidy's walk and git's listing of untracked files read the same directories: side by side.
	var n int
	var found []Finding
	var out []byte
	others := func() (err error) {
		out, err = g.Run(ctx, o, poolArgs("ls-files", "--others", "--directory", "-z")...)
		return err
	}
	walk := func() (err error) { n, found, err = s.tidy(root, !s.noShapes); return err }
	var err error
	if s.noShapes { // the walk as it was before the shape checks (benchmarks)
		if err = walk(); err == nil {
			err = others()
		}
	} else {
		err = git.Parallel(walk, others)
	}
	if err == nil && len(found) > 0 {
		err = others() // a directory tidy opened up (chmod) may have been unreadable to git
	}
	if err != nil {
		return nil, false, err
	}
	found = untrackedModesAside(found, out)
	dirty := n > 0
	for p := range strings.SplitSeq(string(out), "\x00") {
		if p = strings.TrimSuffix(p, "/"); p == "" {
			continue
		}
		if err := root.RemoveAll(filepath.FromSlash(p)); err != nil {
			return nil, false, fmt.Errorf("remove %q: %w", p, err)
		}
		dirty = true
	}
	if len(s.attrs) > 0 {
		co := o
		co.Stdin = strings.NewReader(strings.Join(s.attrs, "\x00") + "\x00")
		if _, err := g.Run(ctx, co, poolArgs("checkout-index", "-f", "-q", "-z", "--stdin")...); err != nil {
			return nil, false, err
		}
	}
	// Exit status 1: some tracked file differs from the index in content, mode or type.
	_, err = g.Run(ctx, o, poolArgs("update-index", "--really-refresh")...)
	if git.ExitCode(err, 1) {
		return found, true, nil
	}
	return found, dirty, err
}

// untrackedModesAside drops the permission findings of untracked entries (others: ls-files
// --others --directory -z), which are deleted anyway: a run's umask is not worth a warning.
func untrackedModesAside(found []Finding, others []byte) []Finding {
	if len(found) == 0 {
		return found
	}
	untracked := map[string]bool{}
	for p := range strings.SplitSeq(string(others), "\x00") {
		untracked[strings.TrimSuffix(p, "/")] = true
	}
	return slices.DeleteFunc(found, func(f Finding) bool {
		if f.Kind != FoundMode && f.Kind != FoundDirMode {
			return false
		}
		for p := f.Path; p != "."; p = path.Dir(p) {
			if untracked[p] {
				return true
			}
		}
		return false
	})
}

// poolArgs prefixes args with poolConfig.
func poolArgs(args ...string) []string { return append(slices.Clip(poolConfig), args...) }

// opts are the options of git on the slot: pinned to its record, in a fresh shadow git dir
// (done removes it), on the private index.
func (s *slot) opts() (git.Opts, func(), error) {
	o, _, done, err := s.repo.Shadowed()
	if err != nil {
		return git.Opts{}, nil, err
	}
	o.Index = s.repo.Index
	return o, done, nil
}

// installIndex copies the private index over the worktree's own, through index.lock as git
// does (an existing lock means someone else's git is at work: an error), keeping the
// private index's modification time (see git.CopyIndex).
func (s *slot) installIndex() error {
	dst := filepath.Join(s.repo.GitDir, "index")
	if _, err := os.Lstat(s.repo.Index); errors.Is(err, fs.ErrNotExist) {
		if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	lock := dst + ".lock"
	if err := git.CopyIndex(s.repo.Index, lock); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			os.Remove(lock)
		}
		return fmt.Errorf("install index: %w", err)
	}
	if err := os.Rename(lock, dst); err != nil {
		os.Remove(lock)
		return fmt.Errorf("install index: %w", err)
	}
	return nil
}

// replaceFile writes dst through dst.lock (created exclusively, renamed over dst: a symlink at
// dst is replaced, never followed).
func replaceFile(dst string, write func(*os.File) error) error {
	lock := dst + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, dst)
	}
	if err != nil {
		os.Remove(lock)
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return nil
}

// maxManifest bounds the entries of a worktree's git dir the manifest describes; git makes a
// handful.
const maxManifest = 256

// manifest describes dir without following symlinks: one entry per path below it — "index"
// aside, which the pool rewrites — with its type and permissions, and for regular files their
// size and SHA-256 (at most 1 MiB each).
func manifest(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "index" {
			return err
		}
		if len(out) >= maxManifest {
			return fmt.Errorf("more than %d entries", maxManifest)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		if fi.Mode().IsRegular() {
			f, err := git.OpenRegular(p, 1<<20)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %d %s", fi.Size(), hex.EncodeToString(h.Sum(nil)))
		}
		out[filepath.ToSlash(rel)] = desc
		return nil
	})
	return out, err
}

// manifestDiff names the first paths (at most three) whose description differs, or "".
func manifestDiff(want, got map[string]string) string {
	var diffs []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok && !yield(k) {
				return
			}
		}
	}) {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			diffs = append(diffs, k+" is gone")
		case !inWant:
			diffs = append(diffs, k+" appeared")
		case w != g:
			diffs = append(diffs, k+" changed")
		}
	}
	return strings.Join(diffs[:min(len(diffs), 3)], ", ")
}
