//go:build e2e

package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestCopyModeRefusesSparseFile is what a user sees of hole 8 of the second trust round: the
// server in copy mode, a run whose CLI creates a free 2.6 GB sparse file in the checkout. The
// call answers edits_inspection_failed naming the file and saying nothing was written; the
// server's TMPDIR never holds staging of it (followed while the call runs, and the server's own
// count of bytes passed to write(2)); the checkout is as it was. Before the fix the server wrote
// the 2.6 GB to its TMPDIR first.
func TestCopyModeRefusesSparseFile(t *testing.T) {
	w := newWorld(t, docker, worldOpts{args: []string{"--docker-mounts", "copy"}})
	repo := w.repo("sparse", map[string]string{"README.md": "hi\n"})
	pid := w.sess.Cmd.Process.Pid
	before := procWritten(pid)
	stop, peak := make(chan struct{}), make(chan int64, 1)
	go func() {
		var most int64
		for {
			most = max(most, stagedIn(w.tmp))
			select {
			case <-stop:
				peak <- max(most, stagedIn(w.tmp))
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	res, sc := w.call("apply_cline_edits", map[string]any{"cwd": repo, "prompt": "Grow fake:attack_copy_sparse?size=2600000000"})
	close(stop)
	most, written := <-peak, procWritten(pid)-before
	t.Logf("staging peak %d bytes, the server wrote %d bytes during the call; %s", most, written, mcpsession.Str(sc, "message"))
	wantResult(t, res, sc, "edits_inspection_failed", 0)
	msg := mcpsession.Str(sc, "message")
	if !strings.Contains(msg, `"big.bin" declares 2.4 GiB`) || !strings.Contains(msg, "nothing was written") {
		t.Errorf("message %q: want the refusal naming big.bin and its declared size, and that nothing was written", msg)
	}
	if most > 1<<20 {
		t.Errorf("the server's TMPDIR held %d bytes of staging at once, want nothing of the refused file", most)
	}
	if before >= 0 && written > 64<<20 {
		t.Errorf("the server wrote %d bytes during the call: it staged the refused file", written)
	}
	for _, p := range []string{"big.bin", "fake-cline-attack-attack_copy_sparse.txt"} {
		if _, err := os.Lstat(filepath.Join(repo, p)); err == nil {
			t.Errorf("%s reached the checkout although the copy back was refused", p)
		}
	}
	if st := gitRun(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the checkout changed: %q", st)
	}
}

// stagedIn is the bytes of the copy-back stages (cline-mcp-back-*) in dir now.
func stagedIn(dir string) int64 {
	var n int64
	stages, _ := filepath.Glob(filepath.Join(dir, "cline-mcp-back-*"))
	for _, s := range stages {
		_ = filepath.WalkDir(s, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
	}
	return n
}

// procWritten is what process pid has passed to write(2) so far (Linux), -1 elsewhere.
func procWritten(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}
