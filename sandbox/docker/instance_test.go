package docker

import (
	"context"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// conflictClient lists one container of instance "dead" until it is removed, which the engine
// answers with a conflict (it is still starting) the first conflicts times, then with "not found"
// (listed while still being created) the next notFound times; gone ends the listing at once (a
// removal by somebody else).
type conflictClient struct {
	Client
	conflicts, notFound int
	gone                bool
	removes, lists      int
}

func (c *conflictClient) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	c.lists++
	if c.gone {
		return client.ContainerListResult{}, nil
	}
	return client.ContainerListResult{Items: []container.Summary{{ID: "c1", Labels: map[string]string{LabelInstance: "dead"}}}}, nil
}

func (c *conflictClient) ContainerRemove(context.Context, string, client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	c.removes++
	switch {
	case c.removes <= c.conflicts:
		return client.ContainerRemoveResult{}, cerrdefs.ErrConflict.WithMessage("container is starting")
	case c.removes <= c.conflicts+c.notFound:
		return client.ContainerRemoveResult{}, cerrdefs.ErrNotFound.WithMessage("No such container: c1")
	}
	c.gone = true
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

// TestRemoveOwnWaitsForAContainerBeingCreated: an engine lists a container it is still creating
// and answers its removal with "not found" (Docker 20.10 does); the sweep lists again until the
// create has ended and the container goes, instead of leaving it behind.
func TestRemoveOwnWaitsForAContainerBeingCreated(t *testing.T) {
	cli := &conflictClient{notFound: 2}
	e := &Executor{cli: cli, instance: "dead"}
	n, err := e.removeWhere(t.Context(), LabelInstance+"=dead", func(string) bool { return true })
	if err != nil || n != 1 || cli.removes != 3 {
		t.Fatalf("removed %d (%v) after %d removals, want the container removed at the third", n, err, cli.removes)
	}
}

// TestRemoveOwnLeavesWhatSomebodyElseRemoved: a listed container that is gone by the removal
// and no longer listed ends the sweep without an error, after one more list.
func TestRemoveOwnLeavesWhatSomebodyElseRemoved(t *testing.T) {
	cli := &conflictClient{notFound: 1 << 30}
	e := &Executor{cli: &goneAfterList{conflictClient: cli}, instance: "dead"}
	n, err := e.removeWhere(t.Context(), LabelInstance+"=dead", func(string) bool { return true })
	if err != nil || n != 0 || cli.removes != 1 || cli.lists != 2 {
		t.Fatalf("removed %d (%v) after %d removals and %d lists, want none after one removal and two lists", n, err, cli.removes, cli.lists)
	}
}

// goneAfterList is a conflictClient whose container somebody else removes right after the
// first removal was asked for.
type goneAfterList struct{ *conflictClient }

func (g *goneAfterList) ContainerRemove(ctx context.Context, id string, o client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	r, err := g.conflictClient.ContainerRemove(ctx, id, o)
	g.gone = true
	return r, err
}
