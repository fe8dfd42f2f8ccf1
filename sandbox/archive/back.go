package archive

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// smallFile is the size up to which a file that may be unchanged is hashed in memory before
// anything is written: unchanged small files (almost all of a tree) never touch the host's disk.
const smallFile = 1 << 20

// fileRec is what the reader knows of a regular file of the archive.
type fileRec struct {
	size   int64
	sum    [sha256.Size]byte
	staged string // staged copy of the content; "" when the content equals the host's copy-in
}

// change is one thing to do to the host tree.
type change struct {
	rel  string
	kind byte // 'd', 'f', 'l'
	mode fs.FileMode
	link string
	// a file's content comes from staged, or else from the host file at from (a hard link to a
	// file the run did not change).
	staged, from string
}

// Plan is a validated copy back: what to change and what to delete. Nothing of it has touched
// the destination yet; its staged files live in the Stage ReadBack was given.
type Plan struct {
	changes []change
	deletes []string // relative paths, deepest first once sorted by Apply
	man     Manifest
}

// reader is the state of one ReadBack.
type reader struct {
	lim    Limits
	man    Manifest
	skip   SkipFunc
	stage  *Stage
	plan   *Plan
	prefix string
	seen   map[string]byte
	files  map[string]fileRec
	count  int
	read   int64 // declared bytes of the entries so far
	staged int64 // what the staged files take (stageCost)
	names  int64 // bytes of the paths and link targets so far
	// upper: the archive is an overlay's upper directory (ReadBackUpper), whose whiteouts
	// (character devices 0/0 and hard links to them) are recorded in seen as 'w'.
	upper bool
}

// ReadBack reads a container's archive of a mount root, checks every entry against the rules
// of sandbox.Return and lim, and stages the files that differ from what was copied in (man) in
// stage. base is the mount root's name the engine puts in front of every entry (Docker:
// "<base>/…"; Podman: "/…"). skip leaves paths out (other mounts, .git); they are read past,
// never staged, never deleted. Any rule or limit broken refuses the whole archive (an error
// wrapping ErrRefused); each limit is checked on an entry's header, before its content is read,
// so a refused archive has staged at most lim.Staged. The caller closes stage, also on error.
func ReadBack(r io.Reader, base string, man Manifest, skip SkipFunc, stage *Stage, lim Limits) (*Plan, error) {
	rd := newReader(man, skip, stage, lim)
	if err := rd.readAll(r, base); err != nil {
		return nil, err
	}
	for rel := range man {
		if _, ok := rd.seen[rel]; !ok {
			rd.plan.deletes = append(rd.plan.deletes, rel)
		}
	}
	return rd.plan, nil
}

func newReader(man Manifest, skip SkipFunc, stage *Stage, lim Limits) *reader {
	return &reader{lim: lim, man: man, skip: skip, stage: stage, plan: &Plan{man: man},
		seen: map[string]byte{}, files: map[string]fileRec{}}
}

// readAll reads every entry of the archive into the reader's plan.
func (rd *reader) readAll(r io.Reader, base string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, tar.ErrHeader) || errors.Is(err, tar.ErrFieldTooLong) {
				return refuse("the archive is malformed after %d entries: %v", rd.count, err)
			}
			return fmt.Errorf("read the archive: %w", err)
		}
		if err := rd.entry(tr, hdr, base); err != nil {
			return err
		}
	}
	if rd.prefix == "" {
		return refuse("the archive is empty")
	}
	return nil
}

// entry checks one header against the limits and the rules and records what it means.
func (rd *reader) entry(r io.Reader, hdr *tar.Header, base string) error {
	rd.count++
	if rd.count > rd.lim.Entries {
		return refuse("more than %d entries", rd.lim.Entries)
	}
	if hdr.Size < 0 {
		return refuse("%q declares a negative size", hdr.Name)
	}
	if hdr.Size > rd.lim.Read-rd.read { // never overflows: rd.read <= lim.Read
		return refuse("%q declares %s: the archive would pass %s", hdr.Name, size(hdr.Size), size(rd.lim.Read))
	}
	rd.read += hdr.Size
	if isSparse(hdr) {
		return refuse("%q is a sparse file entry, which no engine sends", hdr.Name)
	}
	if rd.prefix == "" {
		p, ok := rootPrefix(hdr, base)
		if !ok {
			return refuse("the first entry %q is not the root directory %q", hdr.Name, base)
		}
		rd.prefix = p
		return nil
	}
	rel, err := relName(hdr.Name, rd.prefix)
	if err != nil {
		return err
	}
	if err := rd.checkName(rel, hdr.Linkname); err != nil {
		return err
	}
	if rd.skip(rel) {
		return nil
	}
	if _, dup := rd.seen[rel]; dup {
		return refuse("%q appears twice", rel)
	}
	if err := checkParents(rel, rd.seen); err != nil {
		return err
	}
	return rd.record(r, hdr, rel)
}

// record adds one checked entry to the plan, staging a file's content when it changed.
func (rd *reader) record(r io.Reader, hdr *tar.Header, rel string) error {
	mode := fs.FileMode(hdr.Mode) & PermBits
	old, had := rd.man[rel]
	plan := rd.plan
	switch hdr.Typeflag {
	case tar.TypeDir:
		rd.seen[rel] = 'd'
		if !had || old.kind != 'd' || old.mode != mode {
			plan.changes = append(plan.changes, change{rel: rel, kind: 'd', mode: mode})
		}
	case tar.TypeSymlink:
		if hdr.Linkname == "" || strings.ContainsRune(hdr.Linkname, 0) {
			return refuse("symbolic link %q has an invalid target", rel)
		}
		rd.seen[rel] = 'l'
		if !had || old.kind != 'l' || old.link != hdr.Linkname {
			plan.changes = append(plan.changes, change{rel: rel, kind: 'l', link: hdr.Linkname})
		}
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA: old writers still emit it
		rd.seen[rel] = 'f'
		rec, err := rd.file(r, rel, hdr.Size, old, had && old.kind == 'f')
		if err != nil {
			return err
		}
		rd.files[rel] = rec
		if rec.staged != "" || old.mode != mode {
			c := change{rel: rel, kind: 'f', mode: mode, staged: rec.staged}
			if c.staged == "" {
				c.from = rel // only the mode changed
			}
			plan.changes = append(plan.changes, c)
		}
	case tar.TypeLink:
		if rd.upper && rd.seen[rd.linkTarget(hdr)] == 'w' {
			rd.seen[rel] = 'w' // the overlay links its whiteouts to one another
			return nil
		}
		return rd.hardLink(hdr, rel, mode, old, had)
	case tar.TypeChar:
		if rd.upper && hdr.Devmajor == 0 && hdr.Devminor == 0 {
			rd.seen[rel] = 'w'
			return nil
		}
		return refuse("%q is a device, pipe or other special file (type %q)", rel, hdr.Typeflag)
	default:
		return refuse("%q is a device, pipe or other special file (type %q)", rel, hdr.Typeflag)
	}
	return nil
}

// hardLink records a hard link to an earlier file of the archive as a copy of that file.
func (rd *reader) hardLink(hdr *tar.Header, rel string, mode fs.FileMode, old Entry, had bool) error {
	target, err := relName(hdr.Linkname, rd.prefix)
	if err != nil {
		return err
	}
	src, ok := rd.files[target]
	if !ok {
		return refuse("hard link %q points to %q, which is not an earlier file of the archive", rel, hdr.Linkname)
	}
	rd.seen[rel] = 'f'
	rd.files[rel] = src
	if !had || old.kind != 'f' || old.sum != src.sum || old.mode != mode {
		c := change{rel: rel, kind: 'f', mode: mode, staged: src.staged}
		if c.staged == "" {
			c.from = target
		}
		rd.plan.changes = append(rd.plan.changes, c)
	}
	return nil
}

// checkName bounds an entry's path and link target: their length, the path's depth and what
// all of them together keep in memory.
func (rd *reader) checkName(rel, link string) error {
	if len(rel) > rd.lim.Name || len(link) > rd.lim.Name {
		return refuse("%.64q…: a path or link target longer than %d bytes", rel, rd.lim.Name)
	}
	if d := strings.Count(rel, "/") + 1; d > rd.lim.Depth {
		return refuse("%.64q…: a path deeper than %d directories", rel, rd.lim.Depth)
	}
	rd.names += int64(len(rel) + len(link))
	if rd.names > rd.lim.Names {
		return refuse("the paths and link targets take more than %s", size(rd.lim.Names))
	}
	return nil
}

// isSparse reports a GNU sparse entry (old GNU format or PAX GNU.sparse records): its declared
// size is not what the stream carries, and neither Docker nor Podman writes one.
func isSparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// rootPrefix recognises the archive's first entry, the mount root, and returns what every
// other entry's name starts with: "<base>/" (Docker), "/" (Podman) or "./".
func rootPrefix(hdr *tar.Header, base string) (string, bool) {
	if hdr.Typeflag != tar.TypeDir {
		return "", false
	}
	switch strings.TrimSuffix(hdr.Name, "/") {
	case base:
		return base + "/", true
	case "", "/":
		return "/", true
	case ".":
		return "./", true
	}
	return "", false
}

// relName turns an entry name into a clean path relative to the mount root, refusing anything
// that is not below it: another prefix, absolute names, "..", empty names.
func relName(name, prefix string) (string, error) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return "", refuse("%q is outside the mount root %q", name, prefix)
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" || strings.ContainsRune(rest, 0) || !filepath.IsLocal(filepath.FromSlash(rest)) || path.Clean(rest) != rest {
		return "", refuse("%q is not a plain path below the mount root", name)
	}
	return rest, nil
}

// checkParents refuses an entry whose parent directory did not come before it as a directory:
// nothing is ever written below a symbolic link or a file.
func checkParents(rel string, seen map[string]byte) error {
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	switch seen[dir] {
	case 'd':
		return nil
	case 'l':
		return refuse("%q lies below the symbolic link %q", rel, dir)
	case 0:
		return refuse("%q comes without its parent directory %q", rel, dir)
	}
	return refuse("%q lies below the file %q", rel, dir)
}

// file hashes a regular file's content of n declared bytes and stages it when it differs from
// old, the copy-in (maybeSame: rel was a regular file when copied in). Whether it may be
// staged is decided on n, before a byte is read: a file that cannot be the copy-in (new, or
// of another size) and passes a limit is refused at once; one that may be the copy-in but
// would pass a limit is only hashed, and refused when it differs.
func (rd *reader) file(r io.Reader, rel string, n int64, old Entry, maybeSame bool) (fileRec, error) {
	rec := fileRec{size: n}
	candidate := maybeSame && n == old.size
	if candidate && n <= smallFile {
		return rd.smallFile(r, rel, n, old)
	}
	cost, admitErr := stageCost(n), rd.admit(rel, n)
	if admitErr != nil {
		if !candidate {
			return rec, admitErr
		}
		h := sha256.New()
		if _, err := io.CopyN(h, r, n); err != nil {
			return rec, fmt.Errorf("%s: %w", rel, err)
		}
		if copy(rec.sum[:], h.Sum(nil)); rec.sum != old.sum {
			return rec, admitErr
		}
		return rec, nil
	}
	p, sum, err := rd.write(r, n)
	if err != nil {
		return rec, fmt.Errorf("%s: %w", rel, err)
	}
	rec.sum = sum
	if candidate && sum == old.sum {
		rd.staged -= cost
		rd.stage.release(cost)
		return rec, os.Remove(p)
	}
	rec.staged = p
	return rec, nil
}

// smallFile compares a file that may be the copy-in in memory and stages it only if it differs.
func (rd *reader) smallFile(r io.Reader, rel string, n int64, old Entry) (fileRec, error) {
	rec := fileRec{size: n}
	var buf bytes.Buffer
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(&buf, h), r, n); err != nil {
		return rec, fmt.Errorf("%s: %w", rel, err)
	}
	if copy(rec.sum[:], h.Sum(nil)); rec.sum == old.sum {
		return rec, nil
	}
	if err := rd.admit(rel, n); err != nil {
		return rec, err
	}
	p, _, err := rd.write(&buf, n)
	if err != nil {
		return rec, fmt.Errorf("%s: %w", rel, err)
	}
	rec.staged = p
	return rec, nil
}

// admit decides on a file's declared size whether it may be staged, and reserves its cost
// against this archive's limit and the stage's shared budget.
func (rd *reader) admit(rel string, n int64) error {
	if n > rd.lim.File {
		return refuse("%q declares %s, more than the %s a changed file may have", rel, size(n), size(rd.lim.File))
	}
	cost := stageCost(n)
	if rd.staged+cost > rd.lim.Staged {
		return refuse("%q declares %s: the changed files would take more than the %s staged for one copy back",
			rel, size(n), size(rd.lim.Staged))
	}
	if err := rd.stage.reserve(cost); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	rd.staged += cost
	return nil
}

// write stages at most n bytes of r in a new file of the stage and returns its path and hash.
func (rd *reader) write(r io.Reader, n int64) (string, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	rd.stage.files++
	p := filepath.Join(rd.stage.dir, strconv.Itoa(rd.stage.files))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", sum, err
	}
	h := sha256.New()
	_, err = io.CopyN(io.MultiWriter(f, h), r, n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	copy(sum[:], h.Sum(nil))
	return p, sum, err
}
