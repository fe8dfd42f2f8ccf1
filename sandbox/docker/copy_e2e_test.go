//go:build e2e

package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// copyTree is a host checkout for the copy-mode tests: a few files, a directory to delete, an
// executable, a symbolic link, a .git that is mounted read-only inside it, and a settings copy
// whose providers.json alone comes back.
type copyTree struct {
	repo, data string
	mtime      time.Time
}

func newCopyTree(t *testing.T) copyTree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ct := copyTree{repo: filepath.Join(root, "repo"), data: filepath.Join(root, "data")}
	files := map[string]string{
		"keep.txt": "keep\n", "edit.txt": "old\n", "gone.txt": "bye\n", "gonedir/x.txt": "x\n",
		"sub/deep.txt": "deep\n", "exec.sh": "#!/bin/sh\n", ".git/HEAD": "ref: refs/heads/main\n",
		"nested/.git": "gitdir: /elsewhere\n",
	}
	for name, content := range files {
		writeTestFile(t, filepath.Join(ct.repo, name), content)
	}
	writeTestFile(t, filepath.Join(ct.data, "settings", "providers.json"), `{"before":true}`)
	writeTestFile(t, filepath.Join(ct.data, "settings", "global-settings.json"), `{}`)
	if err := os.Chmod(filepath.Join(ct.repo, "exec.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("keep.txt", filepath.Join(ct.repo, "link")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(filepath.Join(ct.repo, "keep.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	ct.mtime = old
	return ct
}

// mounts are the apply tool's: the checkout writable with the tree coming back, its .git
// read-only, the settings copy writable with only providers.json coming back.
func (ct copyTree) mounts() []sandbox.Mount {
	git, gitFile := filepath.Join(ct.repo, ".git"), filepath.Join(ct.repo, "nested", ".git")
	return []sandbox.Mount{
		{Source: ct.repo, Target: ct.repo, Return: sandbox.Return{Tree: true}},
		{Source: git, Target: git, ReadOnly: true},
		// a linked worktree's .git is a file: a single-file mount inside the checkout
		{Source: gitFile, Target: gitFile, ReadOnly: true},
		{Source: ct.data, Target: ct.data, Return: sandbox.Return{Files: []string{"settings/providers.json"}}},
	}
}

// testCopyRoundTrip runs the probe on a copy of the tree and checks that exactly the run's
// changes reached the host: creates, edits, deletions, modes and links; nothing of .git, nothing
// of the settings copy but providers.json, no untouched file rewritten.
func testCopyRoundTrip(t *testing.T, e *Executor) {
	ct := newCopyTree(t)
	r := func(p string) string { return filepath.Join(ct.repo, p) }
	spec, out, _ := probeSpec(t,
		"read", r("keep.txt"), "id",
		"write", r("edit.txt"), "new content",
		"write", r("new.txt"), "created",
		"mkdir", r("newdir/inner"), "write", r("newdir/inner/n.txt"), "n",
		"rm", r("gone.txt"), "rm", r("gonedir"),
		"chmod", r("exec.sh"), "644",
		"rm", r("link"), "symlink", "new.txt", r("link"),
		"symlink", "/etc/passwd", r("abs-link"),
		"link", r("keep.txt"), r("hard.txt"),
		"write", r(".git/HEAD"), "hacked",
		"write", r("nested/.git"), "gitdir: /etc",
		"write", filepath.Join(ct.data, "settings", "providers.json"), `{"after":true}`,
		"write", filepath.Join(ct.data, "settings", "global-settings.json"), `{"changed":true}`,
		"write", filepath.Join(ct.data, "extra.txt"), "no",
	)
	spec.Mounts = ct.mounts()
	spec.Dir = ct.repo
	x, err := e.Run(t.Context(), spec)
	if err != nil || x.Code != 0 {
		t.Fatalf("Run: %+v %v\n%s", x, err, out)
	}
	if !strings.Contains(out.String(), "read "+r("keep.txt")+" ok: keep") {
		t.Fatalf("the checkout was not copied in:\n%s", out)
	}
	for _, ro := range []string{r(".git/HEAD"), r("nested/.git")} {
		if !strings.Contains(out.String(), "write "+ro+" error") {
			t.Errorf("the read-only %s was writable in the container:\n%s", ro, out)
		}
	}
	checks := []struct{ what, got, want string }{
		{"edit.txt", readTestFile(t, r("edit.txt")), "new content"},
		{"new.txt", readTestFile(t, r("new.txt")), "created"},
		{"newdir/inner/n.txt", readTestFile(t, r("newdir/inner/n.txt")), "n"},
		{"hard.txt (a hard link comes back as a file)", readTestFile(t, r("hard.txt")), "keep\n"},
		{"keep.txt", readTestFile(t, r("keep.txt")), "keep\n"},
		{".git/HEAD", readTestFile(t, r(".git/HEAD")), "ref: refs/heads/main\n"},
		{"nested/.git (never written back)", readTestFile(t, r("nested/.git")), "gitdir: /elsewhere\n"},
		{"providers.json", readTestFile(t, filepath.Join(ct.data, "settings", "providers.json")), `{"after":true}`},
		{"global-settings.json (not returned)", readTestFile(t, filepath.Join(ct.data, "settings", "global-settings.json")), `{}`},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
		}
	}
	for _, gone := range []string{r("gone.txt"), r("gonedir"), filepath.Join(ct.data, "extra.txt")} {
		if _, err := os.Lstat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: got %v, want it absent", gone, err)
		}
	}
	if fi, err := os.Stat(r("exec.sh")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("exec.sh: got mode %v (%v), want 0644", fi.Mode(), err)
	}
	for link, want := range map[string]string{"link": "new.txt", "abs-link": "/etc/passwd"} {
		if got, err := os.Readlink(r(link)); err != nil || got != want {
			t.Errorf("%s: got link %q (%v), want %q", link, got, err, want)
		}
	}
	if fi, err := os.Stat(r("keep.txt")); err != nil || !fi.ModTime().Equal(ct.mtime) {
		t.Errorf("keep.txt was rewritten although the run did not change it (mtime %v, want %v)", fi.ModTime(), ct.mtime)
	}
	if fi, err := os.Stat(r("new.txt")); err == nil {
		wantOwner(t, r("new.txt"), os.Getuid(), os.Getgid())
		_ = fi
	}
	noCopyLeftovers(t, e)
}

// testCopyRefusesSpecialFiles: a FIFO in the container's tree refuses the whole copy back, so
// the run's other edit does not reach the host either.
func testCopyRefusesSpecialFiles(t *testing.T, e *Executor) {
	ct := newCopyTree(t)
	r := func(p string) string { return filepath.Join(ct.repo, p) }
	spec, out, _ := probeSpec(t, "write", r("edit.txt"), "new", "mkfifo", r("pipe"))
	spec.Mounts = ct.mounts()
	x, err := e.Run(t.Context(), spec)
	var cb *sandbox.CopyBackError
	if !errors.As(err, &cb) || !errors.Is(err, archive.ErrRefused) {
		t.Fatalf("got %+v %v, want a CopyBackError refusing the archive\n%s", x, err, out)
	}
	if x.Code != 0 {
		t.Errorf("got exit %+v, want the run's own exit 0 with the copy-back error", x)
	}
	if got := readTestFile(t, r("edit.txt")); got != "old\n" {
		t.Errorf("edit.txt: got %q, want the host untouched", got)
	}
	if _, err := os.Lstat(r("pipe")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the FIFO reached the host: %v", err)
	}
	noCopyLeftovers(t, e)
}

// noCopyLeftovers: no container or volume of the executor's instance remains.
func noCopyLeftovers(t *testing.T, e *Executor) {
	t.Helper()
	e.background.Wait()
	cli := e.cli
	ctx := context.Background()
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelInstance+"="+e.Instance())})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", LabelInstance+"="+e.Instance())})
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, v := range vs.Items {
		if v.Labels[labelCache] == "" { // kept volumes of read-only Mounts stay until Close
			own++
		}
	}
	if len(cs.Items) > 0 || own > 0 {
		t.Errorf("left behind: %d container(s), %d volume(s)", len(cs.Items), own)
	}
}

func TestCopyModeDefaultEngine(t *testing.T) {
	e := newTestExecutor(t, WithMounts(MountsCopy), WithNetwork("none"), WithInstanceID("copy-test-"+t.Name()))
	t.Run("round trip", func(t *testing.T) { testCopyRoundTrip(t, e) })
	t.Run("special file refused", func(t *testing.T) { testCopyRefusesSpecialFiles(t, e) })
}

func TestAutoMountsBindOnTheDefaultEngine(t *testing.T) {
	e := newTestExecutor(t, WithNetwork("none"))
	d, err := e.Describe(t.Context())
	if err != nil || d.Mounts != MountsBind || d.Product == "" || d.Version == "" || d.User == "" {
		t.Fatalf("got %+v %v, want bind: the default engine sees this machine's files", d, err)
	}
	t.Logf("default engine: %+v", d)
}

// TestRunFilesBelongToTheCaller: whatever the engine (rootful, rootless Docker, rootless Podman)
// and whichever user it picks inside the container, a file the run writes into a shared
// directory belongs to the caller on the host. Run this binary as a user with
// DOCKER_HOST pointing at their rootless engine to check that mapping.
func TestRunFilesBelongToTheCaller(t *testing.T) {
	e := newTestExecutor(t, WithNetwork("none"))
	d, err := e.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("engine: %s %s rootless=%v podman=%v user %s mounts %s", d.Product, d.Version, d.Rootless, d.Podman, d.User, d.Mounts)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec, out, _ := probeSpec(t, "id", "write", filepath.Join(dir, "by-run"), "x")
	spec.Mounts = []sandbox.Mount{{Source: dir, Target: dir, Return: sandbox.Return{Tree: true}}}
	if _, err := e.Run(t.Context(), spec); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "write "+filepath.Join(dir, "by-run")+" ok") {
		t.Fatalf("the run could not write into its directory:\n%s", out)
	}
	wantOwner(t, filepath.Join(dir, "by-run"), os.Getuid(), os.Getgid())
}
