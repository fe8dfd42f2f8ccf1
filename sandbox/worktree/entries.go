package worktree

import (
	"context"
	"fmt"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Finding is an entry of a worktree's files that git neither reports nor undoes: anything but
// a directory, regular file or symlink (a FIFO would block the next reader, a socket could
// connect to a listener), a hard link (writing the file would write another one, possibly
// outside the worktree), or permission bits a checkout would not give (group/other bits,
// setuid, setgid, sticky).
type Finding struct {
	// Path is relative to the work tree, with "/" separators.
	Path string
	// What says what was found, e.g. "a FIFO" or "a hard link (2 links)".
	What string
	Kind FindingKind
}

// FindingKind classifies a Finding.
type FindingKind int

const (
	// FoundSpecial is a FIFO, socket, device or other irregular file (removed).
	FoundSpecial FindingKind = iota + 1
	// FoundHardLink is a file or symlink with more than one link (removed).
	FoundHardLink
	// FoundMode is a regular file with other permission bits than a checkout gives (set back in
	// place: the read and write bits a checkout gives, the execute bits as the owner's).
	FoundMode
	// FoundDirMode is a directory with other permission bits (set back in place).
	FoundDirMode
)

func (f Finding) String() string { return strconv.Quote(f.Path) + ": " + f.What }

// maxFindings bounds the findings kept per walk; the walk itself goes on.
const maxFindings = 100

// entryInfo is what the walk knows of one entry, read without following a symlink.
type entryInfo struct {
	mode  fs.FileMode
	links uint64
}

// shape is what a fresh checkout gives: every directory the mode git gave the work tree's top
// (0777 minus the umask, set-id bits inherited from the parent included), every regular file
// those permissions without or with the execute bits (git itself judges the execute bit
// against the commit), and one link per non-directory.
type shape struct {
	dir   fs.FileMode // permission and special bits of a directory
	perms bool        // whether permission bits mean anything here (not on Windows)
}

const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

func shapeOf(top fs.FileMode) shape {
	return shape{dir: top & modeBits, perms: runtime.GOOS != "windows"}
}

// odd says what is wrong with an entry: its kind and a description; kind 0 when nothing is.
func (sh shape) odd(e entryInfo) (FindingKind, string) {
	switch t := e.mode.Type(); {
	case t == fs.ModeDir:
		if sh.perms && e.mode&modeBits != sh.dir {
			return FoundDirMode, fmt.Sprintf("directory mode %v, want %v", e.mode&modeBits|fs.ModeDir, sh.dir|fs.ModeDir)
		}
		return 0, ""
	case t == fs.ModeNamedPipe:
		return FoundSpecial, "a FIFO"
	case t == fs.ModeSocket:
		return FoundSpecial, "a unix socket"
	case t&fs.ModeDevice != 0:
		return FoundSpecial, "a device node"
	case t != 0 && t != fs.ModeSymlink:
		return FoundSpecial, "an irregular file (" + t.String() + ")"
	case e.links > 1:
		return FoundHardLink, fmt.Sprintf("a hard link (%d links)", e.links)
	case t == 0 && sh.perms:
		file := sh.dir.Perm() &^ 0o111
		if m := e.mode & modeBits; m != file && m != sh.dir.Perm() {
			return FoundMode, fmt.Sprintf("mode %v, want %v", m, file)
		}
	}
	return 0, ""
}

// visitFunc is called for every entry below the top, directories before their contents; for a
// directory it returns whether to descend into it.
type visitFunc func(p string, name string, e entryInfo) (descend bool, err error)

// walkEntries visits every entry below root's top but the top's .git, never following a
// symlink: directories are opened through root, entries are stat'ed relative to their
// directory.
func walkEntries(root *os.Root, visit visitFunc) error { return walkEntriesStat(root, true, visit) }

// walkEntriesStat is walkEntries; without stat, entries carry only their type (what the walk
// cost before the shape checks: benchmarks).
func walkEntriesStat(root *os.Root, stat bool, visit visitFunc) error {
	var walk func(dir string) error
	walk = func(dir string) error {
		f, err := root.Open(filepath.FromSlash(dir))
		if err != nil {
			return err
		}
		list, err := f.ReadDir(-1)
		var infos []entryInfo
		switch {
		case err == nil && stat:
			infos, err = statEntries(f, list)
		case err == nil:
			infos = make([]entryInfo, len(list))
			for i, de := range list {
				infos[i] = entryInfo{mode: de.Type(), links: 1}
			}
		}
		f.Close()
		if err != nil {
			return err
		}
		for i, de := range list {
			if dir == "." && de.Name() == ".git" {
				continue // the worktree's own, checked by slot.check
			}
			p := path.Join(dir, de.Name())
			descend, err := visit(p, de.Name(), infos[i])
			if err != nil {
				return err
			}
			if descend && infos[i].mode.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(".")
}

// tidy looks at every entry of the work tree through root (see walkEntries): an entry named
// .git (in any letter case) below the top is an error — git's own walks skip such entries, so
// git would neither report nor remove them, and git run by the next call would take it for a
// repository; everything inside a submodule directory (which git does not look into either) is
// removed, and a submodule path that is no longer a directory is replaced by an empty one. Every
// other entry that fails the shape (see Finding) is removed — a tracked file comes back from
// the reset — or, for permission bits, set to the shape's. It returns how many entries it
// removed and what it found (at most maxFindings).
func (s *slot) tidy(root *os.Root, shapes bool) (int, []Finding, error) {
	links := map[string]bool{}
	for _, l := range s.gitlinks {
		links[l] = true
	}
	sh := shapeOf(s.top.Mode())
	n := 0
	var found []Finding
	remove := func(p string) error {
		n++
		if err := root.RemoveAll(filepath.FromSlash(p)); err != nil {
			return fmt.Errorf("remove %q: %w", p, err)
		}
		return nil
	}
	err := walkEntriesStat(root, shapes, func(p, name string, e entryInfo) (bool, error) {
		switch dir := path.Dir(p); {
		case strings.EqualFold(name, ".git"):
			return false, fmt.Errorf("a .git was planted at %q", p)
		case links[dir]:
			return false, remove(p)
		case links[p] && !e.mode.IsDir():
			if err := remove(p); err != nil {
				return false, err
			}
			return false, root.Mkdir(filepath.FromSlash(p), 0o755)
		}
		var kind FindingKind
		var what string
		if shapes {
			kind, what = sh.odd(e)
		}
		if kind == 0 {
			return true, nil
		}
		if len(found) < maxFindings {
			found = append(found, Finding{Path: p, What: what, Kind: kind})
		}
		switch kind {
		case FoundDirMode, FoundMode:
			mode := sh.dir
			if kind == FoundMode {
				// git judges the execute bit against the commit and rewrites a file that differs.
				mode = sh.dir.Perm() &^ 0o111
				if e.mode&0o100 != 0 {
					mode = sh.dir.Perm()
				}
			}
			// root.Chmod never follows a symlink out of the work tree.
			if err := root.Chmod(filepath.FromSlash(p), mode); err != nil {
				return false, fmt.Errorf("chmod %q: %w", p, err)
			}
			return kind == FoundDirMode, nil
		}
		return false, remove(p)
	})
	return n, found, err
}

// oddEntries lists what fails the shape of a work tree whose top had mode top, without changing
// anything; it skips .git entries (of nested repositories and submodules) and what is inside.
func oddEntries(root *os.Root, top fs.FileMode) ([]Finding, error) {
	sh := shapeOf(top)
	var found []Finding
	err := walkEntries(root, func(p, name string, e entryInfo) (bool, error) {
		if strings.EqualFold(name, ".git") {
			return false, nil
		}
		if kind, what := sh.odd(e); kind != 0 && len(found) < maxFindings {
			found = append(found, Finding{Path: p, What: what, Kind: kind})
		}
		return true, nil
	})
	return found, err
}

// withOddEntries adds to files (Touched's list) the entries of the work tree that git did not
// report (see Finding): "A" for a path the commit does not have, "T" for a tracked path that is
// now a FIFO, socket or device, "M" for a tracked path with a hard link or other permission bits.
// Paths files already names are left alone.
func withOddEntries(ctx context.Context, g *git.Git, o git.Opts, files []git.FileChange, commit string, top fs.FileMode) ([]git.FileChange, error) {
	root, err := os.OpenRoot(o.Repo.Top)
	if err != nil {
		return files, err
	}
	defer root.Close()
	found, err := oddEntries(root, top)
	if err != nil || len(found) == 0 {
		return files, err
	}
	args := []string{"ls-tree", "-r", "-t", "-z", "--name-only", "--full-tree", "--end-of-options", commit, "--"}
	for _, f := range found {
		args = append(args, ":(literal)"+f.Path)
	}
	out, err := g.Run(ctx, o, args...)
	if err != nil {
		return files, err
	}
	tracked := map[string]bool{}
	for p := range strings.SplitSeq(string(out), "\x00") {
		tracked[p] = true
	}
	for _, f := range found {
		if slices.ContainsFunc(files, func(c git.FileChange) bool { return c.Path == f.Path }) ||
			!tracked[f.Path] && (f.Kind == FoundMode || f.Kind == FoundDirMode) {
			continue // git listed it, or a new entry's permissions (the run's umask)
		}
		status := "A"
		switch {
		case tracked[f.Path] && f.Kind == FoundSpecial:
			status = "T"
		case tracked[f.Path]:
			status = "M"
		}
		files = append(files, git.FileChange{Path: f.Path, Status: status})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}
