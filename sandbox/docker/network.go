package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// networkAPI is what the network checks and the egress proxy call on the engine: inspect a
// network, and list and remove the egress networks (the sweep).
type networkAPI interface {
	NetworkInspect(ctx context.Context, network string, options client.NetworkInspectOptions) (client.NetworkInspectResult, error)
	NetworkList(ctx context.Context, options client.NetworkListOptions) (client.NetworkListResult, error)
	NetworkRemove(ctx context.Context, network string, options client.NetworkRemoveOptions) (client.NetworkRemoveResult, error)
}

// Network is the network mode every run uses (WithNetwork).
func (e *Executor) Network() string { return e.network }

// ErrNetworkMissing is wrapped by CheckNetwork when the configured network or container does not
// exist (or the container is not running).
var ErrNetworkMissing = errors.New("network not found")

// CheckNetwork checks that a run could join the configured network: "none", "host", "bridge"
// and "default" always exist; "container:<name>" needs that container to exist and run (the
// run shares its network namespace, e.g. a provider's); any other name must be an existing
// network. A missing one is a *sandbox.LaunchError wrapping ErrNetworkMissing, with a hint.
func (e *Executor) CheckNetwork(ctx context.Context) error {
	switch e.network {
	case "none", "host", "bridge", "default":
		return nil
	}
	if name, ok := strings.CutPrefix(e.network, "container:"); ok {
		r, err := e.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		switch {
		case isNotFound(err):
			return &sandbox.LaunchError{Op: "container inspect", Hint: HintNetwork,
				Err: fmt.Errorf("network %s: container %s: %w", e.network, name, ErrNetworkMissing)}
		case err != nil:
			return e.launchError("container inspect", name, err)
		case r.Container.State == nil || !r.Container.State.Running:
			return &sandbox.LaunchError{Op: "container inspect", Hint: HintNetwork,
				Err: fmt.Errorf("network %s: container %s is not running: %w", e.network, name, ErrNetworkMissing)}
		}
		return nil
	}
	_, err := e.cli.NetworkInspect(ctx, e.network, client.NetworkInspectOptions{})
	switch {
	case isNotFound(err):
		return &sandbox.LaunchError{Op: "network inspect", Hint: HintNetwork,
			Err: fmt.Errorf("network %s: %w", e.network, ErrNetworkMissing)}
	case err != nil:
		return e.launchError("network inspect", e.network, err)
	}
	return nil
}
