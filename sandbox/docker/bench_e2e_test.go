//go:build e2e

package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// BenchmarkRun compares one quick run of the test image three ways:
//
//	executor   Executor.Run (ping cached, image inspect, create, stat, attach, wait, start, remove)
//	raw-api    the bare minimum on the same client library and the same container config:
//	           create, start, wait, remove
//	docker-cli `docker run --rm` through os/exec (the docker CLI must be on PATH)
//
// Goals: executor ≤ 1.10× raw-api, docker-cli ≥ 1.8× executor.
func BenchmarkRun(b *testing.B) {
	e := newTestExecutor(b)
	spec := sandbox.Spec{Path: probePath, Args: []string{"exit", "0"}, Labels: map[string]string{testLabel: "bench"}}
	ctx := context.Background()

	b.Run("executor", func(b *testing.B) {
		for b.Loop() {
			x, err := e.Run(ctx, spec)
			if err != nil || x.Code != 0 {
				b.Fatalf("Run: %+v %v", x, err)
			}
		}
	})

	b.Run("raw-api", func(b *testing.B) {
		opts, err := e.createOptions(spec, "bench", nil)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			c, err := rawCli.ContainerCreate(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := rawCli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
				b.Fatal(err)
			}
			w := rawCli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
			select {
			case r := <-w.Result:
				if r.StatusCode != 0 {
					b.Fatalf("exit %d", r.StatusCode)
				}
			case err := <-w.Error:
				b.Fatal(err)
			}
			if _, err := rawCli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("docker-cli", func(b *testing.B) { benchDockerCLI(b, "bridge") })

	// Without a network the engine skips the veth set-up, which is most of its start cost.
	none := newTestExecutor(b, WithNetwork("none"))
	b.Run("executor-network-none", func(b *testing.B) {
		for b.Loop() {
			x, err := none.Run(ctx, spec)
			if err != nil || x.Code != 0 {
				b.Fatalf("Run: %+v %v", x, err)
			}
		}
	})
	b.Run("docker-cli-network-none", func(b *testing.B) { benchDockerCLI(b, "none") })
}

func benchDockerCLI(b *testing.B, network string) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Skip("docker CLI not on PATH")
	}
	for b.Loop() {
		cmd := exec.Command(docker, "run", "--rm", "--network", network, "--label", testLabel+"=bench", "--entrypoint", probePath, testImage, "exit", "0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("docker run: %v\n%s", err, out)
		}
	}
}

// BenchmarkMounts compares one run with the apply tool's mounts (a checkout of 10,000 files
// in 100 directories, committed, so its .git holds as many objects; the checkout writable and
// brought back, its .git read-only) in bind and in copy mode, interleaved. floor-upload is what
// the engine alone needs to write the same files: one pre-built tar of the checkout uploaded
// into a fresh volume. Reported: medians in ms and copy/bind.
func BenchmarkMounts(b *testing.B) {
	repo := benchRepo(b, 10_000)
	git := filepath.Join(repo, ".git")
	mounts := []sandbox.Mount{
		{Source: repo, Target: repo, Return: sandbox.Return{Tree: true}},
		{Source: git, Target: git, ReadOnly: true},
	}
	bind := newTestExecutor(b, WithNetwork("none"), WithMounts(MountsBind))
	cp := newTestExecutor(b, WithNetwork("none"), WithMounts(MountsCopy))
	spec := sandbox.Spec{Path: probePath, Args: []string{"write", filepath.Join(repo, "bench.txt"), "x"}, Mounts: mounts, Labels: map[string]string{testLabel: "bench"}}
	var tb, tc, tf []time.Duration
	i := 0
	for b.Loop() {
		i++
		order := []*Executor{bind, cp}
		if i%2 == 0 {
			order = []*Executor{cp, bind}
		}
		for _, e := range order {
			start := time.Now()
			if x, err := e.Run(b.Context(), spec); err != nil || x.Code != 0 {
				b.Fatalf("Run: %+v %v", x, err)
			}
			if e == bind {
				tb = append(tb, time.Since(start))
			} else {
				tc = append(tc, time.Since(start))
			}
		}
		tf = append(tf, floorUpload(b, cp, repo))
	}
	mb, mc, mf := medianOf(tb), medianOf(tc), medianOf(tf)
	b.ReportMetric(float64(mb.Microseconds())/1000, "bind-ms")
	b.ReportMetric(float64(mc.Microseconds())/1000, "copy-ms")
	b.ReportMetric(float64(mf.Microseconds())/1000, "floor-upload-ms")
	b.ReportMetric(float64(mc)/float64(mb), "copy/bind")
	b.ReportMetric(0, "ns/op")
}

// floorUpload times the engine writing the checkout (with its .git) into a volume from a tar
// built beforehand: the part of copy mode no client can avoid.
func floorUpload(b *testing.B, e *Executor, repo string) time.Duration {
	b.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := archive.WriteTree(tw, repo, archive.Owner{}, func(string) bool { return false }, nil, nil); err != nil {
		b.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	v, err := rawCli.VolumeCreate(ctx, client.VolumeCreateOptions{Labels: map[string]string{testLabel: "bench"}})
	if err != nil {
		b.Fatal(err)
	}
	defer rawCli.VolumeRemove(context.Background(), v.Volume.Name, client.VolumeRemoveOptions{Force: true})
	cfg := neverStarted(e.image)
	cfg.Labels = map[string]string{testLabel: "bench"}
	c, err := rawCli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: &container.HostConfig{
		NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: v.Volume.Name, Target: repo}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer rawCli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	start := time.Now()
	if _, err := rawCli.CopyToContainer(ctx, c.ID, client.CopyToContainerOptions{DestinationPath: repo, Content: &buf}); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// benchRepo generates a committed repository of n small files in 100 directories (the
// 10,000-file repository of sandbox/worktree's benchmarks).
func benchRepo(b *testing.B, n int) string {
	b.Helper()
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%100), "f"+strconv.Itoa(i)+".txt")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\nsome small content\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "generated"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func medianOf(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
