package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// probeTarget is where the probe container sees the probe directory.
const probeTarget = "/cline-mcp-probe"

// mountMode is decideMounts with the error folded into the reason (for Describe).
func (e *Executor) mountMode(ctx context.Context) (MountMode, string) {
	m, why, err := e.decideMounts(ctx)
	if err != nil {
		return "", "not decided: " + err.Error()
	}
	return m, why
}

// decideMounts returns the mode runs use and why. A configured bind or copy is used as it is;
// auto probes once per Executor (the engine does not change under it) and caches the answer,
// unless the probe itself failed, so the next run probes again.
func (e *Executor) decideMounts(ctx context.Context) (MountMode, string, error) {
	if e.mounts != MountsAuto {
		return e.mounts, "--docker-mounts " + string(e.mounts), nil
	}
	e.probeMu.Lock()
	defer e.probeMu.Unlock()
	if e.probed != "" {
		return e.probed, e.probedWhy, nil
	}
	sees, why, err := e.probeBind(ctx)
	if err != nil {
		return "", "", err
	}
	e.probed, e.probedWhy = MountsCopy, why
	if sees {
		e.probed = MountsBind
	}
	return e.probed, e.probedWhy, nil
}

// probeBind asks whether the engine sees this machine's files: it creates (never starts) a
// container of the image with a fresh temp dir bind-mounted read-only, and looks for a random
// marker file in it through the archive API. An engine that refuses the bind source (it does
// not exist on the engine's machine) or shows an empty directory cannot see our paths. The
// container and the temp dir are removed before it returns.
func (e *Executor) probeBind(ctx context.Context) (bool, string, error) {
	dir, err := os.MkdirTemp("", "cline-mcp-probe-")
	if err != nil {
		return false, "", fmt.Errorf("mount probe: %w", err)
	}
	defer os.RemoveAll(dir)
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	id, err := newRunID()
	if err != nil {
		return false, "", fmt.Errorf("mount probe: %w", err)
	}
	marker := "marker-" + id
	if err := os.WriteFile(filepath.Join(dir, marker), nil, 0o644); err != nil {
		return false, "", fmt.Errorf("mount probe: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return false, "", fmt.Errorf("mount probe: %w", err)
	}
	host := func(ms ...mount.Mount) *container.HostConfig {
		return &container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}, Mounts: ms}
	}
	created, err := e.createLabelled(ctx, id, neverStarted(e.image), host(mount.Mount{Type: mount.TypeBind, Source: dir, Target: probeTarget, ReadOnly: true}))
	if cerrdefs.IsInvalidArgument(err) {
		// Refused for the bind mount (its source does not exist on the engine's machine), or
		// for something else: the same container without the mount tells which.
		plain, perr := e.createLabelled(ctx, id, neverStarted(e.image), host())
		if perr != nil {
			return false, "", fmt.Errorf("mount probe: %w", perr)
		}
		e.remove(ctx, plain)
		return false, fmt.Sprintf("the engine cannot bind-mount this machine's %s (%v): files are copied in and out", dir, err), nil
	}
	if err != nil {
		return false, "", err
	}
	defer e.remove(ctx, created)
	_, err = e.cli.ContainerStatPath(ctx, created, client.ContainerStatPathOptions{Path: probeTarget + "/" + marker})
	switch {
	case err == nil:
		return true, fmt.Sprintf("the engine sees this machine's files (a marker in %s was visible in a container): directories are bind-mounted", dir), nil
	case isNotFound(err):
		return false, fmt.Sprintf("the engine does not see this machine's files (a marker in %s was not visible in a container): files are copied in and out", dir), nil
	}
	return false, "", e.launchError("mount probe stat", created, err)
}

// neverStarted is the config of a container that is only created, never started (the mount
// probe, the copy-mode filler): the entrypoint is not looked up until a start.
func neverStarted(image string) *container.Config {
	return &container.Config{Image: image, Entrypoint: []string{"/cline-mcp-never-started"}}
}

// createLabelled creates a container that carries this executor's run and instance labels,
// with the same care as Run: the request does not follow ctx (a cancel mid-request would leave
// a container we never learned of), and after an error whatever carries the run label is
// removed. It returns the container's id.
func (e *Executor) createLabelled(ctx context.Context, runID string, cfg *container.Config, host *container.HostConfig) (string, error) {
	labels := map[string]string{}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	labels[LabelRun], labels[LabelInstance] = runID, e.instance
	cfg.Labels = labels
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	created, err := e.cli.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	cancel()
	if err != nil {
		e.removeRun(ctx, runID)
		if cerrdefs.IsInvalidArgument(err) {
			return "", err
		}
		return "", e.launchError("docker create", runID, err)
	}
	return created.ID, nil
}
