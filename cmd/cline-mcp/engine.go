package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cline-mcp/cline-mcp/sandbox/docker"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// discoverEngine finds the Docker engine like the docker CLI does (see engine.Discover), from
// --docker-host and this process's environment.
func discoverEngine(cfg *config) (engine.Endpoint, error) {
	home, _ := os.UserHomeDir()
	return engine.Discover(engine.Lookup{Flag: cfg.dockerHost, Getenv: os.Getenv, Home: home})
}

// engineCheck is doctor's line on the engine: which one was chosen and why, what it is
// (Docker or Podman, rootless or not), which user runs Cline, and whether the checkout is
// bind-mounted or copied in and out.
func engineCheck(ctx context.Context, cfg *config, needed bool) check {
	c := check{name: "docker engine", optional: !needed}
	ep, err := discoverEngine(cfg)
	if err != nil {
		c.detail, c.fix = err.Error(), "fix or switch the Docker context (docker context ls / docker context use default), or pass --docker-host"
		return c
	}
	ex, err := newDocker(cfg)
	if err != nil {
		c.detail = fmt.Sprintf("%s (from %s): %v", ep.Host, ep.Source, err)
		return c
	}
	defer ex.Close()
	d, err := ex.Describe(ctx)
	if err != nil {
		c.detail, c.fix = fmt.Sprintf("%s (from %s): %v", ep.Host, ep.Source, err), docker.HintEngine
		return c
	}
	c.ok = true
	c.detail = describeEngine(d)
	return c
}

// describeEngine is one line a user can act on.
func describeEngine(d docker.Engine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (from %s)", d.Endpoint.Host, d.Endpoint.Source)
	if d.Endpoint.TLS != nil {
		b.WriteString(", TLS")
		if !d.Endpoint.TLS.Verify {
			b.WriteString(" without verification")
		}
	}
	fmt.Fprintf(&b, "; %s %s", d.Product, d.Version)
	if d.Rootless {
		b.WriteString(", rootless")
	}
	if d.User != "" {
		fmt.Fprintf(&b, "; runs Cline as %s", d.User)
	}
	if d.Mounts != "" {
		fmt.Fprintf(&b, "; mounts: %s — %s", d.Mounts, d.MountsWhy)
	} else {
		fmt.Fprintf(&b, "; mounts: %s", d.MountsWhy)
	}
	return b.String()
}
