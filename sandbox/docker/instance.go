package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// InstanceID identifies this server process across the machine: "<hostname>-<pid>-<start>"
// (sandbox/proc). Pid plus start time tells a live process from a later one that reused its pid.
func InstanceID() string { return proc.Self().String() }

// Sweep removes what dead server instances left behind: the containers labelled LabelInstance
// whose instance ran on this host and is gone, then their copy-mode volumes and egress networks,
// and the slot directories of their warm containers.
// Containers, volumes and networks of live instances (this one included) are never touched. It
// returns how many containers it removed; the error joins every failure, after trying all
// candidates.
func (e *Executor) Sweep(ctx context.Context) (removed int, err error) {
	host, _ := os.Hostname()
	dead := func(inst string) bool { return inst != e.instance && proc.DeadOnHost(inst, host) }
	removed, err = e.removeWhere(ctx, LabelInstance, dead)
	// The egress networks of dead instances, now that their proxies are gone.
	_, nerr := e.removeNetworks(ctx, LabelInstance, dead)
	return removed, errors.Join(err, nerr, e.removeDeadSlots(dead))
}

// RemoveOwn force-removes every container of this executor's instance, running or not, and
// then its copy-mode volumes and its egress network. The lifeline's watchdog calls it (with
// WithInstanceID of the server) once the server is gone.
func (e *Executor) RemoveOwn(ctx context.Context) (removed int, err error) {
	all := func(string) bool { return true }
	removed, err = e.removeWhere(ctx, LabelInstance+"="+e.instance, all)
	_, nerr := e.removeNetworks(ctx, LabelInstance+"="+e.instance, all)
	return removed, errors.Join(err, nerr, e.removeOwnSlots())
}

// removeWhere force-removes the containers matching the label filter whose instance label
// passes pick, then the volumes that match the same way. "Removal already in progress" and
// "volume in use" count as someone else's business.
//
// A container the engine lists but cannot remove yet — a conflict (another remover at it, or the
// engine still starting it) or "not found" (an engine that lists a container it is still
// creating: Docker 20.10 does, before the create ends) — belongs to a server that may have died
// with its request in flight: the list is asked again for a while (about 10 s), so that no
// container of a dead owner outlives the sweep because it was being made. One removed by somebody
// else meanwhile is no longer listed.
func (e *Executor) removeWhere(ctx context.Context, label string, pick func(instance string) bool) (removed int, err error) {
	var errs []error
	for try := 0; ; try++ {
		list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{
			All:     true,
			Filters: make(client.Filters).Add("label", label),
		})
		if err != nil {
			if client.IsErrConnectionFailed(err) {
				return removed, engineError("container list", err)
			}
			return removed, fmt.Errorf("container list %s: %w", label, err)
		}
		errs = errs[:0]
		pending := 0
		for _, c := range list.Items {
			if !pick(c.Labels[LabelInstance]) {
				continue
			}
			switch ok, notYet, rerr := e.removeForce(ctx, c.ID); {
			case ok:
				removed++
			case notYet:
				pending++
			case rerr != nil:
				errs = append(errs, rerr)
			}
		}
		if pending == 0 || try >= conflictTries || ctx.Err() != nil {
			break
		}
		time.Sleep(conflictPause)
	}
	errs = append(errs, e.removeVolumesWhere(ctx, label, pick))
	return removed, errors.Join(errs...)
}

// conflictTries and conflictPause bound how long a sweep lists again for containers the engine
// would not remove yet (about 10 s).
const (
	conflictTries = 40
	conflictPause = 250 * time.Millisecond
)

// removeForce force-removes one listed container: ok when it did; notYet when the engine answered
// that something else is at it, or that it knows no such container (it may be creating it).
func (e *Executor) removeForce(ctx context.Context, id string) (ok, notYet bool, err error) {
	_, rerr := e.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case rerr == nil:
		return true, false, nil
	case isNotFound(rerr), cerrdefs.IsConflict(rerr):
		return false, true, nil
	}
	return false, false, fmt.Errorf("container remove %s: %w", id, rerr)
}

// removeVolumesWhere removes the copy-mode volumes matching the label filter whose instance
// label passes pick (their containers are gone by now).
func (e *Executor) removeVolumesWhere(ctx context.Context, label string, pick func(instance string) bool) error {
	list, err := e.cli.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		return fmt.Errorf("volume list %s: %w", label, err)
	}
	var errs []error
	for _, v := range list.Items {
		if !pick(v.Labels[LabelInstance]) {
			continue
		}
		_, err := e.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
		if err != nil && !isNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, fmt.Errorf("volume remove %s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}
