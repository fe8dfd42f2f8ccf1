//go:build e2e && linux

package kubernetes

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/testcluster"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// hostileHelper is where the hostile image holds testdata/hostile, which answers the copy back
// with the archive the checkout's .hostile names and hands everything else to the real helper.
const hostileHelper = "/usr/local/bin/hostile-helper"

// hostileImage builds K8sFakeImage plus testdata/hostile and imports it into the cluster's node,
// once per test binary.
func hostileImage(t *testing.T) string {
	t.Helper()
	c := testcluster.Start(t)
	hostileOnce.Lock()
	defer hostileOnce.Unlock()
	if hostileRef == "" {
		hostileRef = buildHostileImage(t, c)
	}
	return hostileRef
}

var (
	hostileOnce sync.Mutex
	hostileRef  string
)

func buildHostileImage(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "hostile-helper"), "./testdata/hostile")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+mcpsession.EngineArch())
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the hostile helper: %v\n%s", err, out)
	}
	df := "FROM " + mcpsession.K8sFakeImage + "\nCOPY hostile-helper " + hostileHelper + "\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := "cline-mcp/fake-cline:" + mcpsession.TestTag("k8s-hostile")
	if out, err := exec.Command("docker", "build", "-q", "-t", ref, dir).CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v\n%s", ref, err, out)
	}
	c.ImportDockerImage(t, ref)
	return ref
}

// TestCopyBackRefusesHostileKeeper: whatever archive the keeper sends goes through the same
// checks as Docker's copy back. A name with .., an absolute name, a file below a link of the
// archive, a device, a hard link to a file outside: each is a CopyBackError (ErrRefused) and
// the checkout and the directory around it stay exactly as they were. A setuid bit is not
// refused but never reaches the host.
func TestCopyBackRefusesHostileKeeper(t *testing.T) {
	e := clusterExecutor(t)
	e.cfg.Image, e.cfg.Helper = hostileImage(t), hostileHelper
	for _, kind := range []string{"dotdot", "absolute", "below-symlink", "device", "hardlink", "setuid"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			work := filepath.Join(root, "repo")
			if err := os.Mkdir(work, 0o777); err != nil {
				t.Fatal(err)
			}
			_ = os.Chmod(work, 0o777)
			for name, body := range map[string]string{"keep.txt": "keep\n", ".hostile": kind + "\n"} {
				if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			spec, out, errb := fakeSpec(work, "Say hi")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			x, err := e.Run(ctx, spec)
			if x.Code != 0 {
				t.Fatalf("the run itself failed: %+v %v\n%s\n%s", x, err, out, errb)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 1 {
				t.Errorf("something landed beside the checkout: %v", entries)
			}
			if kind == "setuid" {
				fi, serr := os.Stat(filepath.Join(work, "keep.txt"))
				if err != nil || serr != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
					t.Errorf("got %v, %v, %v; want keep.txt back as 0755 without setuid", err, fi, serr)
				}
				return
			}
			var cb *sandbox.CopyBackError
			if !errors.As(err, &cb) || !errors.Is(err, archive.ErrRefused) {
				t.Fatalf("got %v, want a refused copy back", err)
			}
			if b, _ := os.ReadFile(filepath.Join(work, "keep.txt")); string(b) != "keep\n" {
				t.Errorf("keep.txt: got %q, want it untouched", b)
			}
			if entries, _ := os.ReadDir(work); len(entries) != 2 {
				t.Errorf("the checkout changed: %v", entries)
			}
		})
	}
}
