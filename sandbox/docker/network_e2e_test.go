//go:build e2e

package docker

import (
	"context"
	"errors"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestCheckNetwork: what `cline-mcp doctor` relies on — built-in modes always pass, a named
// network or container:<name> must exist (and the container run); a missing one is a
// LaunchError wrapping ErrNetworkMissing with the hint.
func TestCheckNetwork(t *testing.T) {
	requireEngine(t)
	ctx := t.Context()
	id, err := newRunID()
	if err != nil {
		t.Fatal(err)
	}
	name := "cline-mcp-test-netcheck-" + id
	created, err := rawCli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{Image: testImage, Entrypoint: []string{probePath}, Cmd: []string{"sleep", "5m"},
			Labels: map[string]string{testLabel: t.Name()}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = rawCli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	})
	stoppedName := name + "-stopped"
	stopped, err := rawCli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       stoppedName,
		Config:     &container.Config{Image: testImage, Entrypoint: []string{probePath}, Labels: map[string]string{testLabel: t.Name()}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = rawCli.ContainerRemove(context.Background(), stopped.ID, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := rawCli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		network string
		missing bool
	}{
		{"none", false},
		{"bridge", false},
		{"container:" + name, false},
		{"container:" + stoppedName, true},
		{"container:" + name + "-nope", true},
		{"cline-mcp-test-no-such-network", true},
	} {
		t.Run(tc.network, func(t *testing.T) {
			e := newTestExecutor(t, WithNetwork(tc.network))
			err := e.CheckNetwork(ctx)
			if !tc.missing {
				if err != nil {
					t.Fatalf("got %v, want the network to be usable", err)
				}
				return
			}
			var le *sandbox.LaunchError
			if !errors.As(err, &le) || !errors.Is(err, ErrNetworkMissing) || le.Hint != HintNetwork {
				t.Fatalf("got %v, want a LaunchError wrapping ErrNetworkMissing with the network hint", err)
			}
		})
	}
}
