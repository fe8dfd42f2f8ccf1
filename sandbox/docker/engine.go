package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
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
	Endpoint Endpoint
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

// flavour is what user mapping depends on: which engine, and whether it runs rootless.
type flavour struct {
	product, version string
	podman, rootless bool
}

// detectFlavour reads the engine's kind from its version and info answers: Podman names a
// "Podman Engine" component; rootless Docker lists "name=rootless" among its security options.
// Rootless Podman does not (4.3 reports an empty list there); it says so in a top-level
// "Rootless" field of the same answer, which the typed client drops: see podmanRootless.
func detectFlavour(v client.ServerVersionResult, info system.Info) flavour {
	f := flavour{product: "Docker Engine", version: v.Version}
	for _, c := range v.Components {
		if strings.EqualFold(c.Name, "Podman Engine") {
			f.podman, f.product, f.version = true, c.Name, c.Version
		}
	}
	f.rootless = slices.ContainsFunc(info.SecurityOptions, func(o string) bool {
		for _, kv := range strings.Split(o, ",") {
			if kv == "name=rootless" {
				return true
			}
		}
		return false
	})
	return f
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
func identityFor(f flavour, caller runUser) identity {
	switch {
	case f.rootless && f.podman:
		return identity{user: caller, userns: "keep-id", podman: true, why: "rootless Podman: the caller's uid:gid with userns keep-id"}
	case f.rootless:
		return identity{user: runUser{0, 0}, why: "rootless Docker: uid 0 in the container is the calling user on the host"}
	}
	return identity{user: caller, podman: f.podman, why: "the caller's uid:gid"}
}

// flavour asks the engine once what it is; the answer is cached. An engine that does not
// answer these calls is treated as a rootful Docker engine, and asked again next time.
func (e *Executor) flavour(ctx context.Context) flavour {
	e.mu.Lock()
	f, ok := e.flav, e.flavKnown
	e.mu.Unlock()
	if ok {
		return f
	}
	v, verr := e.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	info, ierr := e.cli.Info(ctx, client.InfoOptions{})
	f = detectFlavour(v, info.Info)
	if f.podman && !f.rootless && verr == nil && ierr == nil {
		f.rootless, ierr = e.podmanRootless(ctx)
	}
	if verr == nil && ierr == nil {
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
	d.Product, d.Version, d.Podman, d.Rootless = f.product, f.version, f.podman, f.rootless
	if u, err := parseUser(""); err == nil {
		id := identityFor(f, u)
		d.User = id.user.String() + " (" + id.why + ")"
	}
	d.Mounts, d.MountsWhy = e.mountMode(ctx)
	return d, nil
}

// podmanRootless reads the "Rootless" field of Podman's Docker-compatible /info answer with a
// plain HTTP request over the client's own dialer (unix, tcp, TLS or ssh alike). A client
// without a dialer (a test fake) answers false.
func (e *Executor) podmanRootless(ctx context.Context) (bool, error) {
	d, ok := e.cli.(interface {
		Dialer() func(context.Context) (net.Conn, error)
	})
	if !ok {
		return false, nil
	}
	conn, err := d.Dialer()(ctx)
	if err != nil {
		return false, fmt.Errorf("podman info: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	return rootlessFromInfo(conn)
}

// rootlessFromInfo sends GET /info on conn and reads the top-level "Rootless" field.
func rootlessFromInfo(conn io.ReadWriter) (bool, error) {
	req, err := http.NewRequest(http.MethodGet, "http://docker/info", nil)
	if err != nil {
		return false, err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return false, fmt.Errorf("podman info: %w", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return false, fmt.Errorf("podman info: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return false, fmt.Errorf("podman info: %s", res.Status)
	}
	var body struct {
		Rootless bool `json:"Rootless"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 4<<20)).Decode(&body); err != nil {
		return false, fmt.Errorf("podman info: %w", err)
	}
	return body.Rootless, nil
}
