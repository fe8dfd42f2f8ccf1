//go:build e2e

package docker

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// pending is how many warm containers the pool holds ready or is making.
func pending(e *Executor) int {
	e.warm.mu.Lock()
	defer e.warm.mu.Unlock()
	return e.warm.priming + len(e.warm.ready)
}

// firstWrite calls first once, on the first output of the run, then writes to w.
type firstWrite struct {
	w     io.Writer
	first func()
	done  bool
}

func (f *firstWrite) Write(p []byte) (int, error) {
	if !f.done {
		f.done = true
		f.first()
	}
	return f.w.Write(p)
}

// A warm call's replacement is made once the call ended, not while it runs (creating and
// starting a container is the engine's heaviest work; alongside the call it slowed the call's
// own exec and freeze): when the CLI in the claimed container prints, the pool makes nothing;
// after the call the pool is full again.
func TestWarmRefillAfterTheCall(t *testing.T) {
	base, checkout := t.TempDir(), t.TempDir()
	e := newWarmExecutor(t, base)
	e.warm.refillDelay = time.Hour // only the end of the call starts the replacement
	ids, dir := claimWarm(t, e, base, checkout)
	out := newWatchBuffer()
	during := -1
	spec := callSpec(t, dir, checkout, "/bin/sh", "-c", "hostname")
	spec.Stdout, spec.Stderr = &firstWrite{w: out, first: func() { during = pending(e) }}, io.Discard
	x, err := e.Run(t.Context(), spec)
	host := strings.TrimSpace(out.String())
	if err != nil || x.Code != 0 || host == "" || len(ids) != 1 || !strings.HasPrefix(ids[0], host) {
		t.Fatalf("not a warm call (%v): %+v %v, output %q", ids, x, err, out.String())
	}
	if during != 0 {
		t.Fatalf("while the claimed container's CLI ran, the pool held or was making %d containers, want 0", during)
	}
	waitWarm(t, e, 1) // made after the call
}

// A warm container runs only the image it was made from. After the image is rebuilt under the
// same name, the next call does not run in the container of the old image: it starts cold on
// the new one (and its report names the new image), and the pool's next container is made from
// the new image.
func TestWarmImageRebuilt(t *testing.T) {
	needFakeImage(t)
	ctx := t.Context()
	tag := "cline-mcp/docker-test:warm-rebuilt-" + randomTestHex(t)
	if _, err := rawCli.ImageTag(ctx, client.ImageTagOptions{Source: fakeImage, Target: tag}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the executor's Close (registered later, run earlier)
		_, _ = rawCli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	base, checkout := t.TempDir(), t.TempDir()
	e := newWarmExecutor(t, base, WithImage(tag))
	warmCall(t, e, filepath.Join(base, "private-0", "copy"), checkout, "0")
	waitWarm(t, e, 1)
	ids := warmIDs(t, e)

	// The rebuild: the name now names an image with one more label.
	c, err := rawCli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{
		Image: fakeImage, Labels: map[string]string{testLabel: t.Name()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rawCli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	rebuilt, err := rawCli.ContainerCommit(ctx, c.ID, client.ContainerCommitOptions{
		Reference: tag, Changes: []string{"LABEL cline-mcp.test.rebuilt=" + t.Name()}})
	if err != nil {
		t.Fatal(err)
	}

	slot, release := e.WarmSlot()
	if slot == "" {
		t.Fatal("no warm slot although one container is ready")
	}
	x, out := warmCall(t, e, filepath.Join(slot, "copy"), checkout, "1")
	host := strings.SplitN(out, "\n", 2)[0]
	if len(ids) != 1 || strings.HasPrefix(ids[0], host) {
		t.Fatalf("the call ran in %q, the warm container %v of the image before the rebuild", host, ids)
	}
	if x.Container == nil || x.Container.ImageID != rebuilt.ID {
		t.Fatalf("report %+v, want image %s", x.Container, rebuilt.ID)
	}
	release()
	waitWarm(t, e, 1)
	e.background.Wait()
	next := warmIDs(t, e)
	if len(next) != 1 {
		t.Fatalf("warm containers %v, want one", next)
	}
	insp, err := rawCli.ContainerInspect(ctx, next[0], client.ContainerInspectOptions{})
	if err != nil || insp.Container.Image != rebuilt.ID {
		t.Fatalf("the next warm container's image %q (%v), want %s", insp.Container.Image, err, rebuilt.ID)
	}
}

func randomTestHex(t *testing.T) string {
	t.Helper()
	s, err := randomHex(6)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
