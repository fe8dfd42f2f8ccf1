package docker

import (
	"context"
	"fmt"

	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// MountMode is how a run's Mounts reach the container.
type MountMode string

const (
	// MountsAuto shares directories when a probe shows the engine sees this machine's paths,
	// and copies them otherwise (decided once per Executor, at first use).
	MountsAuto MountMode = "auto"
	// MountsBind shares directories through bind mounts: the engine must see this machine's
	// paths (a local engine, Docker Desktop's shared folders).
	MountsBind MountMode = "bind"
	// MountsCopy copies each Mount into a volume before the start and brings back what its
	// Return names after the exit, through the engine's archive API: any engine works (dind on
	// CI, ssh:// and tcp:// remotes).
	MountsCopy MountMode = "copy"
)

// ParseMountMode accepts auto, bind or copy.
func ParseMountMode(s string) (MountMode, error) {
	switch m := MountMode(s); m {
	case MountsAuto, MountsBind, MountsCopy:
		return m, nil
	}
	return "", fmt.Errorf("mount mode %q: must be auto, bind or copy", s)
}

// Engine describes the engine behind an Executor, for doctor and logs.
type Engine struct {
	Endpoint engine.Endpoint
	// Product is "Docker Engine" or "Podman Engine"; Version is its version.
	Product, Version string
	Podman, Rootless bool
	// User says which user runs Cline in the container and why.
	User string
	// Mounts is the mode runs use (bind or copy; empty when it could not be decided yet) and
	// MountsWhy the reason.
	Mounts    MountMode
	MountsWhy string
}

// identity is who the container process is: its numeric user, and the user-namespace mode.
type identity struct {
	user   runUser
	userns string
	why    string
	// podman: the engine takes Podman's option spellings (tmpfs ownership).
	podman bool
}

// identityFor chooses the container's user so that files the run writes into a shared
// directory belong to the caller on the host:
//   - a rootful engine: the caller's uid:gid (the container shares the host's ids);
//   - rootless Docker: uid 0, which the engine's user namespace maps to the caller;
//   - rootless Podman: the caller's uid:gid with --userns=keep-id, which maps the caller's id
//     to itself inside the container.
//
// An explicit Spec.User wins over all of this.
func identityFor(f engine.Kind, caller runUser) identity {
	switch {
	case f.Rootless && f.Podman:
		return identity{user: caller, userns: "keep-id", podman: true, why: "rootless Podman: the caller's uid:gid with userns keep-id"}
	case f.Rootless:
		return identity{user: runUser{0, 0}, why: "rootless Docker: uid 0 in the container is the calling user on the host"}
	}
	return identity{user: caller, podman: f.Podman, why: "the caller's uid:gid"}
}

// flavour asks the engine once what it is; the answer is cached. An engine that does not
// answer these calls is treated as a rootful Docker engine, and asked again next time.
func (e *Executor) flavour(ctx context.Context) engine.Kind {
	e.mu.Lock()
	f, ok := e.flav, e.flavKnown
	e.mu.Unlock()
	if ok {
		return f
	}
	f, err := engine.Detect(ctx, e.cli)
	if err == nil {
		e.mu.Lock()
		e.flav, e.flavKnown = f, true
		e.mu.Unlock()
	}
	return f
}

// Describe pings the engine and says what it is, which user runs Cline, and how mounts reach
// it (which may probe with a short-lived container of the image). The error is the ping's.
func (e *Executor) Describe(ctx context.Context) (Engine, error) {
	d := Engine{Endpoint: e.endpoint}
	if err := e.Ping(ctx); err != nil {
		return d, err
	}
	f := e.flavour(ctx)
	d.Product, d.Version, d.Podman, d.Rootless = f.Product, f.Version, f.Podman, f.Rootless
	if u, err := parseUser(""); err == nil {
		id := identityFor(f, u)
		d.User = id.user.String() + " (" + id.why + ")"
	}
	d.Mounts, d.MountsWhy = e.mountMode(ctx)
	return d, nil
}
