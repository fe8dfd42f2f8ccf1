package docker

import (
	"slices"
	"strings"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// reportOf is what a run's create request enforces, read from the request itself (after the
// egress mode changed it), so that the report cannot say more than the engine was asked for.
func (e *Executor) reportOf(opts client.ContainerCreateOptions, plan *runPlan) sandbox.ContainerReport {
	h := opts.HostConfig
	r := sandbox.ContainerReport{
		Engine:          "docker",
		User:            opts.Config.User,
		UsernsMode:      string(h.UsernsMode),
		ReadOnlyRoot:    h.ReadonlyRootfs,
		CapDrop:         slices.Clone(h.CapDrop),
		NoNewPrivileges: slices.Contains(h.SecurityOpt, "no-new-privileges"),
		Privileged:      h.Privileged,
		Network:         string(h.NetworkMode),
		Egress:          e.egress.Mode,
		MemoryBytes:     h.Memory,
		Mounts:          []sandbox.MountReport{},
	}
	if plan != nil && plan.id.podman {
		r.Engine = "podman"
	}
	if h.PidsLimit != nil {
		r.PidsLimit = *h.PidsLimit
	}
	kind := "bind"
	if plan != nil && plan.copies != nil {
		kind = "copy"
	}
	for _, m := range h.Mounts {
		r.Mounts = append(r.Mounts, sandbox.MountReport{Target: m.Target, ReadOnly: m.ReadOnly, Kind: kind})
	}
	for target := range h.Tmpfs {
		r.Mounts = append(r.Mounts, sandbox.MountReport{Target: target, Kind: "tmpfs"})
	}
	slices.SortFunc(r.Mounts, func(a, b sandbox.MountReport) int { return strings.Compare(a.Target, b.Target) })
	return r
}
