//go:build e2e

package docker

import (
	"context"
	"os/exec"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
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
