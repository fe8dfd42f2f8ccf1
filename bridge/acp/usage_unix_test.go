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
