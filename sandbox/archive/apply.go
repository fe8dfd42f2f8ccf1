package archive

import (
	"archive/tar"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Apply makes the tree at dst match the plan. It first checks that every parent directory it
// will write into is a real directory on the host (or one the plan creates), so a refusal
// changes nothing; then it deletes (deepest first), creates directories (parents first), writes
// files and links (each to a temporary name beside it, renamed over the old one) and finally
// sets directory modes (deepest first, so a read-only directory does not block its own
// children). Every operation goes through an os.Root of dst: nothing outside dst is reachable.
// What the user changed on the host during the run is left alone where the plan did not
// change it; a directory the plan deletes but that is not empty stays.
func (p *Plan) Apply(dst string) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	slices.SortFunc(p.changes, func(a, b change) int { return strings.Compare(a.rel, b.rel) })
	planned := map[string]byte{}
	for _, c := range p.changes {
		planned[c.rel] = c.kind
	}
	for _, c := range p.changes {
		if err := hostParentsOK(root, c.rel, planned); err != nil {
			return err
		}
	}

	deletes := slices.Clone(p.deletes)
	slices.SortFunc(deletes, deeperFirst)
	for _, rel := range deletes {
		if err := remove(root, rel, p.man[rel].kind); err != nil {
			return err
		}
	}
	var dirs []change
	for _, c := range p.changes {
		if err := hostParentsOK(root, c.rel, planned); err != nil {
			return err
		}
		fi, err := root.Lstat(c.rel)
		exists := err == nil
		if exists && kindOf(fi) != c.kind {
			if err := root.Remove(c.rel); err != nil {
				return fmt.Errorf("replace %s: %w", c.rel, err)
			}
			exists = false
		}
		switch c.kind {
		case 'd':
			if !exists {
				if err := root.Mkdir(c.rel, 0o700); err != nil {
					return fmt.Errorf("create %s: %w", c.rel, err)
				}
			}
			dirs = append(dirs, c)
		case 'f':
			if exists && c.staged == "" && c.from == c.rel {
				if err := root.Chmod(c.rel, c.mode); err != nil {
					return fmt.Errorf("chmod %s: %w", c.rel, err)
				}
				continue
			}
			if err := writeFileAt(root, c); err != nil {
				return err
			}
		case 'l':
			tmp := tempName(c.rel)
			if err := root.Symlink(c.link, tmp); err != nil {
				return fmt.Errorf("link %s: %w", c.rel, err)
			}
			if err := root.Rename(tmp, c.rel); err != nil {
				_ = root.Remove(tmp)
				return fmt.Errorf("link %s: %w", c.rel, err)
			}
		}
	}
	slices.SortFunc(dirs, func(a, b change) int { return deeperFirst(a.rel, b.rel) })
	for _, d := range dirs {
		if err := root.Chmod(d.rel, d.mode); err != nil {
			return fmt.Errorf("chmod %s: %w", d.rel, err)
		}
	}
	return nil
}

// deeperFirst orders paths so that children come before their parents.
func deeperFirst(a, b string) int {
	if d := strings.Count(b, "/") - strings.Count(a, "/"); d != 0 {
		return d
	}
	return strings.Compare(b, a)
}

func kindOf(fi fs.FileInfo) byte {
	switch {
	case fi.IsDir():
		return 'd'
	case fi.Mode()&fs.ModeSymlink != 0:
		return 'l'
	case fi.Mode().IsRegular():
		return 'f'
	}
	return '?'
}

// hostParentsOK checks that every parent of rel is a directory on the host, or one the plan
// creates where nothing or something the plan replaces is now. Writing below a symbolic link
// of the host is refused.
func hostParentsOK(root *os.Root, rel string, planned map[string]byte) error {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		fi, err := root.Lstat(dir)
		switch {
		case err == nil && fi.IsDir():
			continue
		case planned[dir] == 'd' && (errors.Is(err, fs.ErrNotExist) || err == nil):
			continue
		case err == nil:
			return fmt.Errorf("%w: %s would be written below %s, which is not a directory on the host", ErrRefused, rel, dir)
		default:
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return nil
}

// remove deletes rel when it still is what was copied in (kind); a directory that is not
// empty (the user added to it) stays.
func remove(root *os.Root, rel string, kind byte) error {
	for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
		if fi, err := root.Lstat(dir); err != nil || !fi.IsDir() {
			return nil // its parent is gone or was replaced: nothing of ours to delete
		}
	}
	fi, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if kindOf(fi) != kind {
		return nil
	}
	if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if kind == 'd' {
			return nil // not empty: what is left in it is not ours to delete
		}
		return fmt.Errorf("delete %s: %w", rel, err)
	}
	return nil
}

// writeFileAt writes a changed file under a temporary name beside it and renames it over rel.
func writeFileAt(root *os.Root, c change) error {
	var src io.ReadCloser
	var err error
	if c.staged != "" {
		src, err = os.Open(c.staged)
	} else {
		src, err = root.Open(c.from)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", c.rel, err)
	}
	defer src.Close()
	tmp := tempName(c.rel)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", c.rel, err)
	}
	_, err = io.Copy(f, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chmod(tmp, c.mode)
	}
	if err == nil {
		err = root.Rename(tmp, c.rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", c.rel, err)
	}
	return nil
}

// tempName is a fresh hidden name in rel's directory.
func tempName(rel string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return path.Join(path.Dir(rel), ".cline-mcp-"+hex.EncodeToString(b)+".tmp")
}

// MaxReturnedFile bounds a file brought back by ReadSingle (settings files are a few KiB).
const MaxReturnedFile = 16 << 20

// ReadSingle reads a container's archive of a single path. It returns the content when the
// path is a regular file of at most MaxReturnedFile bytes (refused on its declared size, before
// it is read), and ok=false for anything else (a
// directory, a link, a device): such a path counts as removed.
func ReadSingle(r io.Reader) (data []byte, ok bool, err error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if errors.Is(err, io.EOF) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the archive: %w", err)
	}
	//nolint:staticcheck // TypeRegA: old writers still emit it
	if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeRegA {
		return nil, false, nil
	}
	if hdr.Size > MaxReturnedFile {
		return nil, false, refuse("the file declares %s, more than %s", size(hdr.Size), size(MaxReturnedFile))
	}
	if isSparse(hdr) {
		return nil, false, refuse("the file is a sparse file entry, which no engine sends")
	}
	data, err = io.ReadAll(io.LimitReader(tr, hdr.Size))
	if err != nil {
		return nil, false, fmt.Errorf("read the archive: %w", err)
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		return nil, false, nil // more than one entry: a directory
	}
	return data, true, nil
}

// PutFile makes rel under dst the regular file data (0600), or removes it when ok is false.
// The parents of rel must be real directories.
func PutFile(dst, rel string, data []byte, ok bool) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := hostParentsOK(root, rel, nil); err != nil {
		return err
	}
	if !ok {
		if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete %s: %w", rel, err)
		}
		return nil
	}
	tmp := tempName(rel)
	if err := root.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := root.Rename(tmp, rel); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}
