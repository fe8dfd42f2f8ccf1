package archive

import (
	"archive/tar"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Entry is what WriteTree remembers of one file it wrote into a container's archive, so
// ReadBack rewrites only what the run changed and Plan.Apply deletes only what went in.
type Entry struct {
	kind byte // 'd' directory, 'f' regular file, 'l' symbolic link
	mode fs.FileMode
	size int64
	sum  [sha256.Size]byte
	link string
}

// Manifest maps slash-separated paths relative to a mount's root to what was copied in.
type Manifest map[string]Entry

// SkipFunc reports whether a relative path (and everything below it) is left out.
type SkipFunc func(rel string) bool

// Owner is the numeric owner WriteTree gives every entry (the container's user).
type Owner struct{ UID, GID int }

// ManifestOf is the Manifest WriteTree would record of src as it is now, writing nothing: what a
// container's copy of src holds once a copy back made src match it.
func ManifestOf(src string, skip, noRecord SkipFunc) (Manifest, error) {
	man := Manifest{}
	tw := tar.NewWriter(io.Discard)
	if err := WriteTree(tw, src, Owner{}, skip, noRecord, man); err != nil {
		return nil, err
	}
	return man, tw.Close()
}

// Under returns a SkipFunc for the given relative paths and their subtrees.
func Under(rels []string) SkipFunc {
	return func(rel string) bool {
		for _, r := range rels {
			if rel == r || strings.HasPrefix(rel, r+"/") {
				return true
			}
		}
		return false
	}
}

// HasGitPart reports whether a relative path has a component named .git (in any case: on a
// case-insensitive file system .GIT is the same directory).
func HasGitPart(rel string) bool {
	for _, p := range strings.Split(rel, "/") {
		if strings.EqualFold(p, ".git") {
			return true
		}
	}
	return false
}

// PermBits are the mode bits copied in both directions: no setuid, setgid or sticky bit ever
// comes back from a container.
const PermBits = fs.ModePerm

// WriteTree writes the tree under src into tw as "./" and "./<rel>" entries owned by u, with
// their permission bits and modification times; symbolic links stay links. Sockets, devices and
// pipes are left out, as are entries that vanish or cannot be read while walking (like a bind
// mount shows them: not at all to a reader without permission). skip leaves out paths and their
// subtrees. When man is not nil, every entry written is recorded in it (regular files with
// their SHA-256) except those for which noRecord says so.
func WriteTree(tw *tar.Writer, src string, u Owner, skip, noRecord SkipFunc, man Manifest) error {
	return WriteTreeAs(tw, ".", src, u, skip, noRecord, man)
}

// WriteTreeAs is WriteTree with the entries named "<name>/" and "<name>/<rel>" (name a relative,
// slash-separated path): a tree uploaded beside others in one archive. man records rel as
// WriteTree does.
func WriteTreeAs(tw *tar.Writer, name, src string, u Owner, skip, noRecord SkipFunc, man Manifest) error {
	name = path.Clean(name)
	buf := make([]byte, 256<<10)
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == src {
				return err
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel := "."
		if p != src {
			r, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(r)
			if skip(rel) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		hdr := &tar.Header{
			Name: name + "/" + rel, Mode: int64(info.Mode() & PermBits), ModTime: info.ModTime(),
			Uid: u.UID, Gid: u.GID, Format: tar.FormatPAX,
		}
		if rel == "." {
			hdr.Name = name + "/"
		}
		record := man != nil && rel != "." && (noRecord == nil || !noRecord(rel))
		var e Entry
		switch {
		case info.IsDir():
			hdr.Typeflag = tar.TypeDir
			if rel != "." {
				hdr.Name += "/"
			}
			e = Entry{kind: 'd', mode: info.Mode() & PermBits}
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return nil
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, link
			e = Entry{kind: 'l', link: link}
		case info.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
			e, ok, err := writeRegular(tw, p, hdr, record, buf)
			if ok && record {
				e.mode = info.Mode() & PermBits
				man[rel] = e
			}
			return err
		default:
			return nil
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if record {
			man[rel] = e
		}
		return nil
	})
}

// writeRegular writes the regular file p under hdr (Size set) and hashes it when record is
// set; ok is false when p cannot be opened (left out, like a file the container could not read).
func writeRegular(tw *tar.Writer, p string, hdr *tar.Header, record bool, buf []byte) (e Entry, ok bool, err error) {
	f, err := os.Open(p)
	if err != nil {
		return e, false, nil
	}
	defer f.Close()
	if err := tw.WriteHeader(hdr); err != nil {
		return e, false, err
	}
	var h hash.Hash
	var w io.Writer = tw
	if record {
		h = sha256.New()
		w = io.MultiWriter(tw, h)
	}
	n, err := io.CopyBuffer(w, io.LimitReader(f, hdr.Size), buf)
	if err != nil {
		return e, false, fmt.Errorf("copy %s: %w", p, err)
	}
	if n != hdr.Size {
		return e, false, fmt.Errorf("copy %s: it shrank while being copied (%d of %d bytes)", p, n, hdr.Size)
	}
	e = Entry{kind: 'f', size: n}
	if record {
		copy(e.sum[:], h.Sum(nil))
	}
	return e, true, nil
}

// WriteDirEntry writes the one entry "<name>/" (a directory owned by u with mode). Uploaded to
// the parent of a volume's mount point, it sets the owner and mode of the volume's root, which
// an entry "./" inside the volume does not do on every engine.
func WriteDirEntry(tw *tar.Writer, name string, mode fs.FileMode, u Owner) error {
	return tw.WriteHeader(&tar.Header{
		Name: path.Clean(name) + "/", Typeflag: tar.TypeDir, Mode: int64(mode & PermBits),
		Uid: u.UID, Gid: u.GID, Format: tar.FormatPAX,
	})
}

// WriteFile writes the one regular file src as name, owned by u, without write bits when
// readOnly.
func WriteFile(tw *tar.Writer, name, src string, u Owner, readOnly bool) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	mode := info.Mode() & PermBits
	if readOnly {
		mode &^= 0o222
	}
	if err := tw.WriteHeader(&tar.Header{
		Name: name, Typeflag: tar.TypeReg, Mode: int64(mode), Size: info.Size(),
		ModTime: info.ModTime(), Uid: u.UID, Gid: u.GID, Format: tar.FormatPAX,
	}); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(f, info.Size()))
	if err == nil && n != info.Size() {
		err = fmt.Errorf("%s shrank while being copied", src)
	}
	return err
}
