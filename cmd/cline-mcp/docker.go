package main

import (
	"context"
	"errors"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// newDocker builds the Docker executor when an engine is configured. A missing engine is not
// fatal: calls that need Docker then fail with launch_failed and the reason.
func newDocker(ctx context.Context, cfg *config) (sandbox.Executor, func(context.Context) (int, error), error) {
	return nil, nil, errors.New("docker executor not wired yet")
}

// dockerCheck reports the engine and the configured image; it is required only when Docker
// isolation is configured.
func dockerCheck(ctx context.Context, cfg *config, needed bool) check {
	c := check{name: "docker", optional: !needed}
	_, _, err := newDocker(ctx, cfg)
	if err != nil {
		c.detail = err.Error()
		c.fix = "start the Docker engine and build the image: make image (or make image-fake for tests)"
		if !needed {
			c.detail += " (only needed for --isolation docker or calls with isolation:\"docker\")"
		}
		return c
	}
	c.ok = true
	c.detail = "engine reachable, image " + cfg.dockerImage + " present"
	return c
}
