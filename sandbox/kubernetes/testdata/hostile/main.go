// Command hostile stands in for cline-mcp-k8s-helper in the hostile-keeper e2e test: for "tar
// PATH" it answers the copy back with the hostile archive that PATH/.hostile names (what a
// compromised image could send); every other use is the real helper's.
package main

import (
	"archive/tar"
	"os"
	"strings"
	"syscall"
)

const realHelper = "/usr/local/bin/cline-mcp-k8s-helper"

func main() {
	if len(os.Args) == 3 && os.Args[1] == "tar" {
		kind, _ := os.ReadFile(os.Args[2] + "/.hostile")
		if err := hostile(strings.TrimSpace(string(kind))); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		return
	}
	if err := syscall.Exec(realHelper, append([]string{realHelper}, os.Args[1:]...), os.Environ()); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(127)
	}
}

func hostile(kind string) error {
	root := &tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}
	var hs []*tar.Header
	switch kind {
	case "dotdot":
		hs = []*tar.Header{{Name: "./../escape.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}}
	case "absolute":
		hs = []*tar.Header{{Name: "/escape.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}}
	case "below-symlink":
		hs = []*tar.Header{{Name: "./out", Typeflag: tar.TypeSymlink, Linkname: ".."},
			{Name: "./out/escape.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}}
	case "device":
		hs = []*tar.Header{{Name: "./null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3}}
	case "hardlink":
		hs = []*tar.Header{{Name: "./passwd", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}
	case "setuid":
		hs = []*tar.Header{{Name: "./keep.txt", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 1}}
	}
	tw := tar.NewWriter(os.Stdout)
	for _, h := range append([]*tar.Header{root}, hs...) {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte("x")); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}
