package git

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Snapshot fills ev.Index, ev.Tree, ev.Submodules and ev.Nested for the recorded repository r.
//
// It gives the trees `git add -A` into a copy of the index gives, built so that nothing a run
// wrote can make the host execute a program or read outside the work tree:
//   - git runs in a private shadow git dir (see shadow): the only config it reads is ours plus
//     the data-only settings recorded before the run, so no clean/smudge filter, textconv, hook,
//     fsmonitor or other program can be configured — .gitattributes may name a driver, but no
//     driver is defined; the objects are the repository's own;
//   - a tracked file whose stat data matches its entry keeps the entry untouched (its content is
//     not read: Git LFS checkouts keep their pointers and big repositories stay cheap); changed
//     files are stored as they are on disk, symlinks as links, never their targets' content;
//   - a directory with its own .git that git would treat as a nested repository is read as
//     plain files here (its .git is never looked into), and tracked submodules stay at their
//     recorded commit — git never follows a .git file or directory the run could have planted;
//     only the stat data of files inside submodules is fingerprinted.
func (g *Git) Snapshot(ctx context.Context, r *Repo, ev *Evidence) error {
	o, tmp, done, err := r.Shadowed()
	if err != nil {
		return err
	}
	defer done()
	if err := CopyIndex(r.Index, o.Index); err != nil {
		return fmt.Errorf("copy index: %w", err)
	}

	var stage, others []byte
	err = Parallel(
		func() (err error) { stage, err = g.Run(ctx, o, "ls-files", "--stage", "-z"); return err },
		func() (err error) {
			others, err = g.Run(ctx, o, "ls-files", "--others", "--exclude-standard", "-z")
			return err
		},
		func() error {
			out, err := g.Run(ctx, o, "write-tree", "--missing-ok")
			if err == nil {
				ev.Index = strings.TrimSpace(string(out))
			}
			return ctx.Err() // unmerged entries cannot be written as a tree: Index stays ""
		},
	)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(r.Top)
	if err != nil {
		return err
	}
	defer root.Close()
	w := &walker{root: root}

	spec, subs, nested, err := g.addSpec(ctx, o, w, stage, others, ev)
	if err != nil {
		return err
	}
	ev.Submodules = w.fingerprint(subs)

	// --ignore-errors keeps going past files that vanish or cannot be read mid-scan; git still
	// exits non-zero then, so try once more before settling for a best-effort tree.
	add := []string{"add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul"}
	ao := o
	ao.Stdin = bytes.NewReader(spec.Bytes())
	_, err = g.Run(ctx, ao, add...)
	if err != nil && ctx.Err() == nil {
		ao.Stdin = bytes.NewReader(spec.Bytes())
		_, err = g.Run(ctx, ao, add...)
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		ev.Incomplete = true
		ev.Warnings = append(ev.Warnings, "some files could not be read for the git evidence: "+err.Error())
	}
	if err := g.addNested(ctx, o, tmp, w, nested, ev); err != nil {
		return err
	}
	out, err := g.Run(ctx, o, "write-tree", "--missing-ok")
	if err != nil {
		return err
	}
	ev.Tree = strings.TrimSpace(string(out))
	return nil
}

// addSpec is the pathspec of `git add` (NUL-separated, from stdin): everything but submodules
// and nested repositories; it records the nested repositories in ev and returns their files
// (read as plain files) and the submodule paths.
func (g *Git) addSpec(ctx context.Context, o Opts, w *walker, stage, others []byte, ev *Evidence) (bytes.Buffer, []string, []candidate, error) {
	var spec bytes.Buffer
	spec.WriteString(".\x00")
	subs := Gitlinks(stage)
	for _, path := range subs {
		spec.WriteString(":(exclude,literal)" + path + "\x00")
	}
	var nested []candidate
	for _, p := range strings.Split(string(others), "\x00") {
		dir, ok := strings.CutSuffix(p, "/") // git lists a nested repository as "dir/"
		if !ok {
			continue
		}
		ev.Nested = append(ev.Nested, dir)
		spec.WriteString(":(exclude,literal)" + dir + "/\x00")
		found, err := g.nestedFiles(ctx, o, w, dir)
		if err != nil {
			return spec, nil, nil, err
		}
		nested = append(nested, found...)
	}
	return spec, subs, nested, nil
}

// addNested stores the files of nested repositories, read as plain files, in the snapshot's index.
func (g *Git) addNested(ctx context.Context, o Opts, tmp string, w *walker, nested []candidate, ev *Evidence) error {
	if len(nested) == 0 {
		return nil
	}
	edits, warns, err := g.hashCandidates(ctx, o, tmp, w, nested)
	if err != nil {
		return err
	}
	if len(warns) > 0 {
		ev.Incomplete = true
		ev.Warnings = append(ev.Warnings, warns...)
	}
	if len(edits) == 0 {
		return nil
	}
	var in bytes.Buffer
	for _, e := range edits {
		fmt.Fprintf(&in, "%s %s\t%s\x00", e.mode, e.oid, e.path)
	}
	uo := o
	uo.Stdin = &in
	_, err = g.Run(ctx, uo, "update-index", "--add", "--replace", "-z", "--index-info")
	return err
}

// gitlinks returns the paths of the submodule entries in `ls-files --stage -z` output, without
// splitting the (large) listing into strings.
func Gitlinks(stage []byte) []string {
	var subs []string
	prefix := []byte(modeGitlink + " ")
	for len(stage) > 0 {
		rec := stage
		if i := bytes.IndexByte(stage, 0); i >= 0 {
			rec, stage = stage[:i], stage[i+1:]
		} else {
			stage = nil
		}
		if !bytes.HasPrefix(rec, prefix) {
			continue
		}
		if i := bytes.IndexByte(rec, '\t'); i >= 0 {
			if p := string(rec[i+1:]); !slices.Contains(subs, p) { // one per stage of a conflict
				subs = append(subs, p)
			}
		}
	}
	return subs
}

// shadowed prepares a private temp dir with a shadow git dir for r and returns the options of a
// call pinned to it (index: tmp/index, not created), the dir, and its removal.
func (r *Repo) Shadowed() (Opts, string, func(), error) {
	tmp, err := os.MkdirTemp("", "cline-mcp-snap-")
	if err != nil {
		return Opts{}, "", nil, err
	}
	done := func() { os.RemoveAll(tmp) }
	shadow, err := r.shadow(tmp)
	if err != nil {
		done()
		return Opts{}, "", nil, err
	}
	return Opts{Repo: r, Shadow: shadow, Index: filepath.Join(tmp, "index")}, tmp, done, nil
}

// copyIndex copies the index file at src to dst, never following a symlink, and gives the copy
// the original's modification time: git compares entries against the index file's mtime to spot
// files changed in the same instant the index was written ("racily clean" entries, whose content
// it then compares); a fresh mtime would hide such a change. A missing (or empty) index means an
// empty one: nothing is created.
func CopyIndex(src, dst string) error {
	f, err := OpenRegular(src, maxIndexBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, f)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n == 0 {
		return os.Remove(dst) // git refuses a zero-byte index
	}
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			err = os.Chtimes(dst, fi.ModTime(), fi.ModTime())
		}
	}
	return err
}

// maxIndexBytes bounds the index copy; an index is ~100 bytes per file.
const maxIndexBytes = 2 << 30

// openRegular opens path for reading only if it is a regular file no bigger than limit; a
// symlink, FIFO, socket or device is refused before it is opened.
func OpenRegular(path string, limit int64) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%v)", path, fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	if now, err := f.Stat(); err != nil || !os.SameFile(fi, now) {
		f.Close()
		return nil, fmt.Errorf("%s: replaced while it was opened", path)
	}
	return f, nil
}

// parallel runs fns at once and joins their errors.
func Parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// walker reads the work tree without following symlinks out of it. It is used by one
// goroutine at a time.
type walker struct {
	root *os.Root // every read goes through it: a symlink cannot lead outside the work tree
}

// candidate is a file whose content must be stored.
type candidate struct {
	path string
	mode string
}

// nestedFiles lists the files of a directory git treats as a nested repository, as if it were
// an ordinary directory: its .git (at any depth) is skipped, never read, and ignore rules apply.
func (g *Git) nestedFiles(ctx context.Context, o Opts, w *walker, dir string) ([]candidate, error) {
	var found []candidate
	var walk func(d string) error
	walk = func(d string) error {
		f, err := w.root.Open(filepath.FromSlash(d))
		if err != nil {
			return nil // vanished or not a directory any more
		}
		list, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return nil
		}
		for _, de := range list {
			if strings.EqualFold(de.Name(), ".git") {
				continue
			}
			p := d + "/" + de.Name()
			if de.IsDir() { // a symlink to a directory is not IsDir: it is stored as a link
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			switch de.Type() {
			case 0:
				mode := modeFile
				if fi, err := de.Info(); err == nil && fi.Mode().Perm()&0o100 != 0 {
					mode = modeExec
				}
				found = append(found, candidate{path: p, mode: mode})
			case fs.ModeSymlink:
				found = append(found, candidate{path: p, mode: modeSymlink})
			} // FIFOs, sockets and devices are not content
		}
		return ctx.Err()
	}
	if err := walk(dir); err != nil || len(found) == 0 {
		return found, err
	}
	var in bytes.Buffer
	for _, c := range found {
		in.WriteString(c.path + "\x00")
	}
	out, err := g.Run(ctx, Opts{Repo: o.Repo, Index: o.Index, Stdin: &in}, "check-ignore", "--no-index", "-z", "--stdin")
	if err != nil && !ExitCode(err, 1) { // 1 = nothing ignored
		return nil, err
	}
	ignored := map[string]bool{}
	for _, p := range strings.Split(string(out), "\x00") {
		ignored[p] = true
	}
	return slices.DeleteFunc(found, func(c candidate) bool { return ignored[c.path] }), nil
}

// fingerprint digests the stat data of every file inside the given submodule work trees (their
// .git is skipped), so a change inside a submodule, which the tree records only as a commit,
// still shows in CheckoutMayChange.
func (w *walker) fingerprint(subs []string) string {
	if len(subs) == 0 {
		return ""
	}
	h := sha256.New()
	var walk func(d string)
	walk = func(d string) {
		f, err := w.root.Open(filepath.FromSlash(d))
		if err != nil {
			return
		}
		list, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return
		}
		for _, de := range list {
			if strings.EqualFold(de.Name(), ".git") {
				continue
			}
			p := d + "/" + de.Name()
			if fi, err := de.Info(); err == nil {
				fmt.Fprintf(h, "%s\x00%v\x00%d\x00%d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
			}
			if de.IsDir() {
				walk(p)
			}
		}
	}
	for _, s := range subs {
		walk(s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// edit is one index entry to write.
type edit struct{ mode, oid, path string }

// hashCandidates copies every candidate's content (a symlink's target name, never its target)
// through the walker's root and stores it with one `hash-object -w --no-filters`. It returns
// the entries to write and warnings for files that could not be read.
func (g *Git) hashCandidates(ctx context.Context, o Opts, tmp string, w *walker, cands []candidate) ([]edit, []string, error) {
	var todo []candidate
	var paths bytes.Buffer
	var warns []string
	for i, c := range cands {
		cp := filepath.Join(tmp, "c"+strconv.Itoa(i))
		if err := w.copyOut(c, cp); err != nil {
			warns = append(warns, fmt.Sprintf("%q could not be read for the git evidence: %v", c.path, err))
			continue
		}
		todo = append(todo, c)
		paths.WriteString(cp + "\n")
	}
	if len(todo) == 0 {
		return nil, warns, nil
	}
	ho := o
	ho.Stdin = &paths
	out, err := g.Run(ctx, ho, "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return nil, nil, err
	}
	oids := strings.Fields(string(out))
	if len(oids) != len(todo) {
		return nil, nil, fmt.Errorf("hash-object: got %d ids for %d files", len(oids), len(todo))
	}
	edits := make([]edit, len(todo))
	for i, c := range todo {
		edits[i] = edit{mode: c.mode, oid: oids[i], path: c.path}
	}
	return edits, warns, nil
}

// copyOut writes c's content to dst: a regular file's bytes (opened without blocking, refused
// when it is no longer a regular file) or a symlink's target name.
func (w *walker) copyOut(c candidate, dst string) error {
	name := filepath.FromSlash(c.path)
	var content io.Reader
	if c.mode == modeSymlink {
		target, err := w.root.Readlink(name)
		if err != nil {
			return err
		}
		content = strings.NewReader(target)
	} else {
		f, err := w.root.OpenFile(name, os.O_RDONLY|openNonblock, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("not a regular file")
		}
		content = f
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, content)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadSmall reads a regular file of at most 64 KiB without following a symlink.
func ReadSmall(p string) ([]byte, error) {
	f, err := OpenRegular(p, 64<<10)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 64<<10))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
