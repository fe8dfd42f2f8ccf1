//go:build unix

package acp

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadUsageRefusesFIFO: a FIFO planted where the manifest belongs (a container writes the
// session's data dir) is refused at once; a blocking open would hang the call for good.
func TestReadUsageRefusesFIFO(t *testing.T) {
	data := t.TempDir()
	id := "1796278600502_lmK-X_cli"
	dir := filepath.Join(data, "sessions", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, id+".json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was not planted: %v %v", st, err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadUsage(data, id); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO was read as a manifest")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadUsage blocked on a FIFO")
	}
}

// TestReadRegularFollowsNoLink: a manifest that is a symbolic link — to a file outside the data
// dir or to a regular file inside it — is refused without reading the target; a regular file is
// read, and one past the limit is refused.
func TestReadRegularFollowsNoLink(t *testing.T) {
	data, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	inside := filepath.Join(data, "inside.json")
	for _, p := range []string{secret, inside} {
		if err := os.WriteFile(p, []byte(`{"metadata":{"usage":{"inputTokens":7}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"outside": secret, "inside": inside} {
		link := filepath.Join(data, "link-"+name)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link was not planted: %v", err)
		}
		if b, err := ReadRegular(data, "link-"+name, 1<<20); err == nil {
			t.Errorf("a link to a file %s the dir was read: %q", name, b)
		}
	}
	if b, err := ReadRegular(data, "inside.json", 1<<20); err != nil || len(b) == 0 {
		t.Errorf("a regular file was not read: %v", err)
	}
	if _, err := ReadRegular(data, "inside.json", 8); err == nil {
		t.Error("a file past the limit was read")
	}
}
