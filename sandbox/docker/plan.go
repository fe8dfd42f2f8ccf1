package docker

import (
	"context"

	"github.com/moby/moby/api/types/mount"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// runPlan is what Run decides for one run once the engine answers: who runs Cline, and how the
// Spec's Mounts reach the container.
type runPlan struct {
	id identity
	// copies is the copy-mode state (nil in bind mode); volumes replace the bind mounts then.
	copies  *copySet
	volumes []mount.Mount
}

// warmOnly reports whether the plan's copies were made for a reserved warm container (the
// call's own directories have no volumes): only that container can run it.
func (p *runPlan) warmOnly() bool { return p.copies != nil && p.copies.warm != nil }

// prepare picks the container's user for this engine (Spec.User wins) and the mount mode, and
// in copy mode creates and fills the run's volumes (those of the call's own directories only
// when warm is false or no reserved warm container holds them). release must run once the run
// container is gone, whatever happened.
func (e *Executor) prepare(ctx context.Context, spec sandbox.Spec, runID string, warm bool) (runPlan, error) {
	var p runPlan
	if spec.User != "" {
		u, err := parseUser(spec.User)
		if err != nil {
			return p, &sandbox.LaunchError{Op: "docker spec", Err: err}
		}
		p.id = identity{user: u, why: "the Spec's user", podman: e.flavour(ctx).Podman}
	} else {
		caller, err := parseUser("")
		if err != nil {
			return p, &sandbox.LaunchError{Op: "docker spec", Err: err}
		}
		p.id = identityFor(e.flavour(ctx), caller)
	}
	if len(spec.Mounts) == 0 {
		return p, nil
	}
	mode, _, err := e.decideMounts(ctx)
	if err != nil {
		return p, err
	}
	if mode == MountsCopy {
		var w *warmC
		if warm {
			w = e.reservedSlot(spec)
		}
		p.copies, p.volumes, err = e.prepareCopy(ctx, spec, runID, p.id, w)
	}
	return p, err
}

// copyBack brings back what the Mounts' Return names (copy mode only).
func (p *runPlan) copyBack(ctx context.Context, id string) error {
	if p.copies == nil {
		return nil
	}
	return p.copies.copyBack(ctx, id)
}

// release removes the run's volumes (copy mode only) in the background: a volume holding a
// checkout can take seconds to delete (one file at a time on the engine's disk), which the
// caller need not wait for. Executor.Close waits for it; Sweep removes the volumes of a server
// that died before.
func (p *runPlan) release(ctx context.Context, e *Executor) {
	if p.copies == nil {
		return
	}
	// The kept volumes are free for the next call's fill at once (the container is gone).
	for _, d := range p.copies.dirs {
		d.release()
	}
	e.background.Go(func() { p.copies.cleanup(context.WithoutCancel(ctx)) })
}
