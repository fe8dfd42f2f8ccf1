package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// untar unpacks r into dir: directories, regular files and symbolic links, with their
// permission bits and times; every name must stay below dir ("./x", "x"), and nothing is written
// below a link the archive made.
func untar(r *tar.Reader, dir string) error {
	links := map[string]bool{}
	for {
		hdr, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel := filepath.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if rel == "." || hdr.Name == "./" {
			if hdr.Typeflag == tar.TypeDir {
				_ = os.Chmod(dir, fs.FileMode(hdr.Mode)&fs.ModePerm)
			}
			continue
		}
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("%q is outside the directory", hdr.Name)
		}
		for p := filepath.Dir(rel); p != "."; p = filepath.Dir(p) {
			if links[p] {
				return fmt.Errorf("%q is below a link", hdr.Name)
			}
		}
		if err := unpack(r, hdr, filepath.Join(dir, rel)); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeSymlink {
			links[rel] = true
		}
	}
}

func unpack(r io.Reader, hdr *tar.Header, p string) error {
	mode := fs.FileMode(hdr.Mode) & fs.ModePerm
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		defer func() { _ = os.Chmod(p, mode); _ = os.Chtimes(p, hdr.ModTime, hdr.ModTime) }()
		return nil
	case tar.TypeReg:
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		_ = os.Chmod(p, mode)
		return os.Chtimes(p, hdr.ModTime, hdr.ModTime)
	case tar.TypeSymlink:
		return os.Symlink(hdr.Linkname, p)
	}
	return nil // devices, fifos, hard links: never sent by the executor
}

// writeTar writes a tar of path: "./" and "./<rel>" entries for a directory (regular files,
// directories and links), one entry named after it for a file, nothing when it does not exist.
func writeTar(w io.Writer, path string) error {
	tw := tar.NewWriter(w)
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tw.Close()
	case err != nil:
		return err
	case !fi.IsDir():
		if err := addEntry(tw, path, filepath.Base(path), fi); err != nil {
			return err
		}
		return tw.Close()
	}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(path, p)
		name := "./"
		if rel != "." {
			name = "./" + filepath.ToSlash(rel)
		}
		return addEntry(tw, p, name, fi)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func addEntry(tw *tar.Writer, p, name string, fi fs.FileInfo) error {
	link := ""
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		l, err := os.Readlink(p)
		if err != nil {
			return err
		}
		link = l
	case !fi.Mode().IsRegular() && !fi.IsDir():
		return nil // sockets, fifos, devices stay in the pod
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return err
	}
	hdr.Name, hdr.Uname, hdr.Gname = name, "", ""
	if fi.IsDir() && !strings.HasSuffix(hdr.Name, "/") {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyN(tw, f, hdr.Size)
	return err
}
