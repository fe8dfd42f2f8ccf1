package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox/docker"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// TestEngineCheckSaysWhereTheEngineCameFrom: doctor's engine line names the address and its
// source, also when the engine does not answer, and a broken context gets the context fix.
func TestEngineCheckSaysWhereTheEngineCameFrom(t *testing.T) {
	dead := "unix://" + filepath.Join(t.TempDir(), "dead.sock")
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONFIG", t.TempDir())

	cfg := validConfig()
	cfg.dockerHost = dead
	c := engineCheck(t.Context(), cfg, true)
	if c.ok || !strings.Contains(c.detail, dead+" (from --docker-host)") || c.optional {
		t.Errorf("got %+v, want a required failure naming %s from --docker-host", c, dead)
	}

	cfg.dockerHost = ""
	t.Setenv("DOCKER_CONTEXT", "nope")
	c = engineCheck(t.Context(), cfg, false)
	if c.ok || !strings.Contains(c.detail, `context "nope" does not exist`) || !strings.Contains(c.fix, "docker context use") || !c.optional {
		t.Errorf("got %+v, want an optional failure naming the missing context with the context fix", c)
	}
}

func TestDescribeEngine(t *testing.T) {
	d := docker.Engine{
		Endpoint: engine.Endpoint{Host: "tcp://docker:2376", Source: "DOCKER_HOST", TLS: &engine.TLSFiles{}},
		Product:  "Docker Engine", Version: "27.3.1", Rootless: true,
		User:   "0:0 (rootless Docker: uid 0 in the container is the calling user on the host)",
		Mounts: docker.MountsCopy, MountsWhy: "the engine does not see this machine's files",
	}
	want := "tcp://docker:2376 (from DOCKER_HOST), TLS without verification; Docker Engine 27.3.1, rootless; runs Cline as 0:0 (rootless Docker: uid 0 in the container is the calling user on the host); mounts: copy — the engine does not see this machine's files"
	if got := describeEngine(d); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// validConfig is the flags' defaults.
func validConfig() *config {
	cfg := &config{}
	fs := newFlags(nil)
	cfg.register(fs)
	return cfg
}
