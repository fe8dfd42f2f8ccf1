package main

import (
	"errors"
	"runtime"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/docker"
)

// hostGOOS is the platform the server runs on; a variable so tests can play Windows.
var hostGOOS = runtime.GOOS

// errDockerWindows: a Windows path (C:\\repo) cannot be mounted at the same absolute path in a
// Linux container, which the bridge relies on for Cline's paths to be valid on the host, and
// Windows has no numeric uid:gid to run the container as. Docker isolation is refused there
// rather than half working.
var errDockerWindows = &sandbox.LaunchError{
	Op:   "docker isolation",
	Err:  errors.New("not supported on a Windows host"),
	Hint: "run cline-mcp inside WSL2 (a Linux host for Docker Desktop) for Docker isolation, or use host isolation on Windows",
}

// newDocker builds the Docker executor from the flags. It does not contact the engine: an
// engine that is down (or starts later) is found per call, and such a call fails with
// launch_failed and the fix instead of falling back to the host.
func newDocker(cfg *config, extra ...docker.Option) (*docker.Executor, error) {
	if hostGOOS == "windows" {
		return nil, errDockerWindows
	}
	mem, err := parseBytes(cfg.dockerMemory)
	if err != nil {
		return nil, err
	}
	mode, err := sandbox.ResolveEgressMode(cfg.dockerEgress, cfg.dockerNetwork, len(cfg.egressAllow) > 0)
	if err != nil {
		return nil, err
	}
	ep, err := discoverEngine(cfg)
	if err != nil {
		return nil, &sandbox.LaunchError{Op: "docker engine", Err: err, Hint: "fix or switch the Docker context (docker context ls / docker context use default), or pass --docker-host"}
	}
	mounts, err := docker.ParseMountMode(cfg.dockerMounts)
	if err != nil {
		return nil, err
	}
	opts := []docker.Option{
		docker.WithEndpoint(ep),
		docker.WithMounts(mounts),
		docker.WithImage(cfg.dockerImage),
		docker.WithNetwork(cfg.dockerNetwork),
		docker.WithEgress(docker.Egress{Mode: mode, Image: cfg.dockerEgressImage, Allow: cfg.egressAllow}),
		docker.WithMemory(mem),
		docker.WithPidsLimit(cfg.dockerPids),
		docker.WithCPUs(cfg.dockerCPUs),
		docker.WithWarm(cfg.dockerWarm, ""),
	}
	return docker.New(append(opts, extra...)...)
}
