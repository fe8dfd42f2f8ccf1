//go:build e2e

package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// fakeImage is images/fake-cline with the fake CLI of this checkout, built once for the tests
// that need a hostile CLI rather than the probe.
var fakeImage = "cline-mcp/docker-test:fake" + os.Getenv("CLINE_MCP_TEST_TAG")

var (
	fakeOnce sync.Once
	fakeErr  error
)

// needFakeImage builds fakeImage through the engine API (no docker CLI, no registry).
func needFakeImage(t *testing.T) {
	t.Helper()
	requireEngine(t)
	fakeOnce.Do(func() { fakeErr = buildFakeImage(t) })
	if fakeErr != nil {
		t.Fatalf("build %s: %v", fakeImage, fakeErr)
	}
}

func buildFakeImage(t *testing.T) error {
	ctx := t.Context()
	v, err := rawCli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return err
	}
	bin := filepath.Join(t.TempDir(), "fake-cline")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "../../internal/cmd/fake-cline")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+v.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build fake-cline: %w\n%s", err, out)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	df, err := os.ReadFile(filepath.Join("..", "..", "images", "fake-cline", "Dockerfile"))
	if err != nil {
		return err
	}
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, df}, {"fake-cline", 0o755, exe}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	res, err := rawCli.ImageBuild(ctx, &ctxTar, client.ImageBuildOptions{Tags: []string{fakeImage}, Remove: true, ForceRemove: true})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var msg struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Error != "" {
			return fmt.Errorf("image build: %s", msg.Error)
		}
	}
	return sc.Err()
}

// stagingMeter follows a directory (the TMPDIR copy mode stages in) while a run goes on and
// keeps the most bytes its files held at once.
type stagingMeter struct {
	dir  string
	stop chan struct{}
	done chan int64
}

func meterStaging(dir string) *stagingMeter {
	m := &stagingMeter{dir: dir, stop: make(chan struct{}), done: make(chan int64, 1)}
	go func() {
		var peak int64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, dirBytes(dir))
			select {
			case <-m.stop:
				m.done <- max(peak, dirBytes(dir))
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

// peak stops the meter and returns the most bytes seen.
func (m *stagingMeter) peak() int64 {
	close(m.stop)
	return <-m.done
}

func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// writtenBytes is what this process has passed to write(2) so far (Linux), -1 elsewhere: the
// staged bytes cannot hide from it between two samples of the meter.
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
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

// TestCopyBackSparseFileStaysWithinLimits is hole 8 of the second trust round: a hostile CLI
// creates a sparse file of 2.6 GB in the container — free there, 2.6 GB of zeros in the archive
// the copy back reads. The host must refuse it on its declared size: the staging directory
// never holds more than the limit (before the fix it held all 2.6 GB, the report's 2,578 MiB),
// the checkout stays as it was, the run's exit comes with a CopyBackError naming the file.
func TestCopyBackSparseFileStaysWithinLimits(t *testing.T) {
	needFakeImage(t)
	small := archive.DefaultLimits
	small.File, small.Staged = 4<<20, 8<<20
	for _, tt := range []struct {
		name string
		lim  archive.Limits
		opts []Option
	}{
		{"default limits", archive.DefaultLimits, nil},
		{"limits of a few MiB", small, []Option{WithCopyLimits(small)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stageParent := t.TempDir()
			t.Setenv("TMPDIR", stageParent)
			opts := append([]Option{WithImage(fakeImage), WithMounts(MountsCopy), WithNetwork("none"),
				WithInstanceID("copy-limits-" + strconv.Itoa(os.Getpid()) + "-" + strings.ReplaceAll(tt.name, " ", "-"))}, tt.opts...)
			e := newTestExecutor(t, opts...)
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			repo, data := filepath.Join(root, "repo"), filepath.Join(root, "data")
			writeTestFile(t, filepath.Join(repo, "README.md"), "hi\n")
			if err := os.MkdirAll(data, 0o755); err != nil {
				t.Fatal(err)
			}
			out, errOut := newWatchBuffer(), newWatchBuffer()
			spec := sandbox.Spec{
				Path:   "/usr/local/bin/cline",
				Args:   []string{"--json", "--auto-approve", "true", "-c", repo, "--data-dir", data, "Grow fake:attack_copy_sparse?size=2600000000"},
				Env:    []string{"HOME=/home/cline"},
				Dir:    repo,
				Stdout: out, Stderr: errOut,
				Mounts: []sandbox.Mount{{Source: repo, Target: repo, Return: sandbox.Return{Tree: true}}, {Source: data, Target: data}},
				Tmpfs:  []sandbox.Tmpfs{{Target: "/home/cline"}, {Target: "/tmp"}},
				Labels: map[string]string{testLabel: t.Name()},
			}
			before := writtenBytes()
			meter := meterStaging(stageParent)
			x, err := e.Run(t.Context(), spec)
			peak, written := meter.peak(), writtenBytes()-before
			report := strings.ReplaceAll(out.String(), `\"`, `"`)
			if !strings.Contains(report, `"sparse":"ok"`) || !strings.Contains(report, `"size":2600000000`) {
				t.Fatalf("the sparse file was not created in the container (the attack did not run): %+v %v\nstdout:\n%s\nstderr:\n%s", x, err, out, errOut)
			}
			t.Logf("%s: staging peak %d bytes (limit %d), %d bytes written by this process; %v", tt.name, peak, tt.lim.Staged, written, err)
			var cb *sandbox.CopyBackError
			if !errors.As(err, &cb) || !errors.Is(err, archive.ErrRefused) || !strings.Contains(err.Error(), "big.bin") || x.Code != 0 {
				t.Errorf("got %+v %v, want the run's exit 0 with a CopyBackError refusing big.bin", x, err)
			}
			if peak > tt.lim.Staged || peak > 1<<20 {
				t.Errorf("the host staged %d bytes at once, want nothing of big.bin (limit %d)", peak, tt.lim.Staged)
			}
			if before >= 0 && written > tt.lim.Staged {
				t.Errorf("this process wrote %d bytes during the run, more than the staging limit %d", written, tt.lim.Staged)
			}
			if left, _ := os.ReadDir(stageParent); len(left) != 0 {
				t.Errorf("the staging directory was left behind: %v", left)
			}
			for _, p := range []string{"big.bin", "fake-cline-attack-attack_copy_sparse.txt"} {
				if _, err := os.Lstat(filepath.Join(repo, p)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s reached the checkout although the copy back was refused: %v", p, err)
				}
			}
			if got := readTestFile(t, filepath.Join(repo, "README.md")); got != "hi\n" {
				t.Errorf("README.md: got %q, want it untouched", got)
			}
			noCopyLeftovers(t, e)
		})
	}
}
