package main

import (
	"os"

	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// discoverEngine finds the Docker engine like the docker CLI does (see engine.Discover), from
// --docker-host and this process's environment.
func discoverEngine(cfg *config) (engine.Endpoint, error) {
	home, _ := os.UserHomeDir()
	return engine.Discover(engine.Lookup{Flag: cfg.dockerHost, Getenv: os.Getenv, Home: home})
}
