package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// InstanceID identifies this server process across the machine: "<hostname>-<pid>-<start>",
// where start is the process start time from sandbox/proc (Linux, macOS and Windows), or 0 where
// that is unknown. Pid plus start time tells a live process from a later one that reused its pid.
func InstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	pid := os.Getpid()
	return formatInstance(host, pid, proc.Self())
}

func formatInstance(host string, pid int, start uint64) string {
	return host + "-" + strconv.Itoa(pid) + "-" + strconv.FormatUint(start, 10)
}

// instance is a parsed instance id.
type instance struct {
	host  string
	pid   int
	start uint64
}

// parseInstance splits an instance id from the right, since a hostname may contain dashes.
func parseInstance(id string) (instance, bool) {
	rest, startS, ok := cutLast(id, "-")
	if !ok {
		return instance{}, false
	}
	host, pidS, ok := cutLast(rest, "-")
	if !ok || host == "" {
		return instance{}, false
	}
	pid, err := strconv.Atoi(pidS)
	if err != nil || pid <= 0 {
		return instance{}, false
	}
	start, err := strconv.ParseUint(startS, 10, 64)
	if err != nil {
		return instance{}, false
	}
	return instance{host, pid, start}, true
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// dead reports whether the instance id names a process of this host that provably no longer
// runs: no such pid, or a pid with another start time. Anything it cannot judge — another
// host (a remote engine shared by several machines), an unparsable id, a start time of 0 —
// counts as alive.
func dead(id, host string) bool {
	in, ok := parseInstance(id)
	if !ok || in.host != host {
		return false
	}
	return proc.Gone(in.pid, in.start)
}

// Sweep removes the containers left behind by dead server instances: those labelled
// LabelInstance whose instance ran on this host and is gone, and then their copy-mode volumes. Containers of live instances
// (this one included) are never touched. It returns how many it removed; the error joins
// every failure, after trying all candidates.
func (e *Executor) Sweep(ctx context.Context) (removed int, err error) {
	list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelInstance),
	})
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return 0, engineError("container list", err)
		}
		return 0, fmt.Errorf("container list %s: %w", LabelInstance, err)
	}
	host, _ := os.Hostname()
	var errs []error
	for _, c := range list.Items {
		inst := c.Labels[LabelInstance]
		if inst == e.instance || !dead(inst, host) {
			continue
		}
		_, rerr := e.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case rerr == nil:
			removed++
		case isNotFound(rerr), cerrdefs.IsConflict(rerr):
			// someone else (another sweeper, or the owner's own cleanup) was faster or is at it
		default:
			errs = append(errs, fmt.Errorf("container remove %s: %w", c.ID, rerr))
		}
	}
	errs = append(errs, e.sweepVolumes(ctx, host))
	return removed, errors.Join(errs...)
}

// sweepVolumes removes the copy-mode volumes of dead instances of this host (their containers
// are gone by now). Volumes still in use are the engine's to refuse.
func (e *Executor) sweepVolumes(ctx context.Context, host string) error {
	list, err := e.cli.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", LabelInstance)})
	if err != nil {
		return fmt.Errorf("volume list %s: %w", LabelInstance, err)
	}
	var errs []error
	for _, v := range list.Items {
		inst := v.Labels[LabelInstance]
		if inst == e.instance || !dead(inst, host) {
			continue
		}
		_, err := e.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
		if err != nil && !isNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, fmt.Errorf("volume remove %s: %w", v.Name, err))
		}
	}
	return errors.Join(errs...)
}
