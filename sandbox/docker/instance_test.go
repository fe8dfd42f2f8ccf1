package docker

import (
	"context"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// conflictClient lists one container of instance "dead", which the engine refuses to remove
// with a conflict (it is still starting) the first conflicts times.
type conflictClient struct {
	Client
	conflicts int
	removes   int
}

func (c *conflictClient) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	return client.ContainerListResult{Items: []container.Summary{{ID: "c1", Labels: map[string]string{LabelInstance: "dead"}}}}, nil
}

func (c *conflictClient) ContainerRemove(context.Context, string, client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	c.removes++
	if c.removes <= c.conflicts {
		return client.ContainerRemoveResult{}, cerrdefs.ErrConflict.WithMessage("container is starting")
	}
	return client.ContainerRemoveResult{}, nil
}

func (c *conflictClient) VolumeList(context.Context, client.VolumeListOptions) (client.VolumeListResult, error) {
	return client.VolumeListResult{}, nil
}

// TestRemoveOwnAsksAgainAfterAConflict: a container the engine is still starting when its
// server died answers the watchdog's removal with a conflict; the removal is asked again until
// it goes, instead of leaving the container running.
func TestRemoveOwnAsksAgainAfterAConflict(t *testing.T) {
	cli := &conflictClient{conflicts: 3}
	e := &Executor{cli: cli, instance: "dead"}
	n, err := e.removeWhere(t.Context(), LabelInstance+"=dead", func(string) bool { return true })
	if err != nil || n != 1 || cli.removes != 4 {
		t.Fatalf("removed %d (%v) after %d removals, want the container removed at the fourth", n, err, cli.removes)
	}
}
