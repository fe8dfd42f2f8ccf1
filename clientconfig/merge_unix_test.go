//go:build unix

package clientconfig

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMergeRefusesSpecialFiles: a FIFO (which a plain open would wait on forever), a directory, a
// socket, a file larger than MaxFileBytes or a dangling symlink is refused with an error naming
// what it is, and is left as it was. The marker: a symlink to a regular file is merged into the
// file it names, and stays a link.
func TestMergeRefusesSpecialFiles(t *testing.T) {
	c, _ := Find("cursor")
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real.json"), filepath.Join(dir, "link.json")
	if err := os.WriteFile(real, []byte(`{"theme": "dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(c, link, "cline", Entry{Command: "x"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(real); !strings.Contains(string(b), `"mcpServers"`) {
		t.Fatalf("the linked file was not merged: %s", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	fifo, sock, huge, dangling := filepath.Join(dir, "fifo"), filepath.Join(dir, "sock"), filepath.Join(dir, "huge"), filepath.Join(dir, "dangling")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if f, err := os.Create(huge); err != nil || f.Truncate(MaxFileBytes+1) != nil || f.Close() != nil {
		t.Fatal("cannot make a sparse file:", err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere", "x"), dangling); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "FIFO", sock: "socket", huge: "larger than", dangling: "symlink", t.TempDir(): "directory"} {
		if _, err := Merge(c, path, "cline", Entry{Command: "x"}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Merge into %s: %v, want an error saying %q", path, err, want)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi, err)
	}
}
