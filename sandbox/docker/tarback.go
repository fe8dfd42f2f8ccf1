package docker

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

// backLimits bound what a copy back accepts from a container: entries in the archive, bytes in
// it, and bytes of changed files staged on the host.
type backLimits struct {
	entries int
	bytes   int64
	changed int64
}

// defaultBackLimits are generous for a source tree and small against a disk.
var defaultBackLimits = backLimits{entries: 500_000, bytes: 16 << 30, changed: 2 << 30}

// errHostile marks an archive a copy back refuses.
var errHostile = errors.New("refused")

func hostile(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errHostile, fmt.Sprintf(format, args...))
}

// smallFile is the size up to which a file is hashed in memory before anything is written:
// unchanged small files (almost all of a tree) never touch the host's disk.
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

// backPlan is a validated copy back: what to change and what to delete. Nothing of it has
// touched the destination yet.
type backPlan struct {
	changes []change
	deletes []string // relative paths, deepest first once sorted by apply
	man     manifest
}

// readBack reads a container's archive of a mount root, checks every entry against the rules
// of sandbox.Return and stages the files that differ from what was copied in (man) in stage,
// a private directory. base is the mount root's name the engine puts in front of every entry
// (Docker: "<base>/…"; Podman: "/…"). skip leaves paths out (other mounts, .git); they are
// read past, never staged, never deleted. Any rule broken refuses the whole archive.
func readBack(r io.Reader, base string, man manifest, skip skipFunc, stage string, lim backLimits) (*backPlan, error) {
	tr := tar.NewReader(r)
	plan := &backPlan{man: man}
	prefix := ""
	seen := map[string]byte{}
	files := map[string]fileRec{}
	var count int
	var total, staged int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the archive: %w", err)
		}
		count++
		total += max(hdr.Size, 0)
		if count > lim.entries {
			return nil, hostile("more than %d entries", lim.entries)
		}
		if total > lim.bytes {
			return nil, hostile("more than %d bytes", lim.bytes)
		}
		if prefix == "" {
			p, ok := rootPrefix(hdr, base)
			if !ok {
				return nil, hostile("the first entry %q is not the root directory %q", hdr.Name, base)
			}
			prefix = p
			continue
		}
		rel, err := relName(hdr.Name, prefix)
		if err != nil {
			return nil, err
		}
		if skip(rel) {
			continue
		}
		if _, dup := seen[rel]; dup {
			return nil, hostile("%q appears twice", rel)
		}
		if err := checkParents(rel, seen); err != nil {
			return nil, err
		}
		mode := fs.FileMode(hdr.Mode) & permBits
		old, had := man[rel]
		switch hdr.Typeflag {
		case tar.TypeDir:
			seen[rel] = 'd'
			if !had || old.kind != 'd' || old.mode != mode {
				plan.changes = append(plan.changes, change{rel: rel, kind: 'd', mode: mode})
			}
		case tar.TypeSymlink:
			if hdr.Linkname == "" || strings.ContainsRune(hdr.Linkname, 0) {
				return nil, hostile("symbolic link %q has an invalid target", rel)
			}
			seen[rel] = 'l'
			if !had || old.kind != 'l' || old.link != hdr.Linkname {
				plan.changes = append(plan.changes, change{rel: rel, kind: 'l', link: hdr.Linkname})
			}
		case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA: old writers still emit it
			seen[rel] = 'f'
			rec, err := readFile(tr, hdr.Size, old, had && old.kind == 'f', stage, count)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			staged += stagedSize(rec)
			if staged > lim.changed {
				return nil, hostile("more than %d bytes of changed files", lim.changed)
			}
			files[rel] = rec
			if rec.staged != "" || old.mode != mode {
				c := change{rel: rel, kind: 'f', mode: mode, staged: rec.staged}
				if c.staged == "" {
					c.from = rel // only the mode changed
				}
				plan.changes = append(plan.changes, c)
			}
		case tar.TypeLink:
			target, err := relName(hdr.Linkname, prefix)
			if err != nil {
				return nil, err
			}
			src, ok := files[target]
			if !ok {
				return nil, hostile("hard link %q points to %q, which is not an earlier file of the archive", rel, hdr.Linkname)
			}
			seen[rel] = 'f'
			files[rel] = src
			if !had || old.kind != 'f' || old.sum != src.sum || old.mode != mode {
				c := change{rel: rel, kind: 'f', mode: mode, staged: src.staged}
				if c.staged == "" {
					c.from = target
				}
				plan.changes = append(plan.changes, c)
			}
		default:
			return nil, hostile("%q is a device, pipe or other special file (type %q)", rel, hdr.Typeflag)
		}
	}
	if prefix == "" {
		return nil, hostile("the archive is empty")
	}
	for rel := range man {
		if _, ok := seen[rel]; !ok {
			plan.deletes = append(plan.deletes, rel)
		}
	}
	return plan, nil
}

func stagedSize(r fileRec) int64 {
	if r.staged == "" {
		return 0
	}
	return r.size
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
		return "", hostile("%q is outside the mount root %q", name, prefix)
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" || strings.ContainsRune(rest, 0) || !filepath.IsLocal(filepath.FromSlash(rest)) || path.Clean(rest) != rest {
		return "", hostile("%q is not a plain path below the mount root", name)
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
		return hostile("%q lies below the symbolic link %q", rel, dir)
	case 0:
		return hostile("%q comes without its parent directory %q", rel, dir)
	}
	return hostile("%q lies below the file %q", rel, dir)
}

// readFile hashes a regular file's content and stages it when it differs from old (the copy-in).
// Small files are compared in memory; larger ones are staged while hashed and unstaged when equal.
func readFile(r io.Reader, size int64, old entry, same bool, stage string, n int) (fileRec, error) {
	rec := fileRec{size: size}
	h := sha256.New()
	if same && size == old.size && size <= smallFile {
		var buf bytes.Buffer
		if _, err := io.CopyN(io.MultiWriter(&buf, h), r, size); err != nil {
			return rec, err
		}
		copy(rec.sum[:], h.Sum(nil))
		if rec.sum == old.sum {
			return rec, nil
		}
		p := filepath.Join(stage, strconv.Itoa(n)+"-s")
		rec.staged = p
		return rec, os.WriteFile(p, buf.Bytes(), 0o600)
	}
	p := filepath.Join(stage, strconv.Itoa(n)+"-f")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return rec, err
	}
	_, err = io.CopyN(io.MultiWriter(f, h), r, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rec, err
	}
	copy(rec.sum[:], h.Sum(nil))
	if same && size == old.size && rec.sum == old.sum {
		return rec, os.Remove(p)
	}
	rec.staged = p
	return rec, nil
}
