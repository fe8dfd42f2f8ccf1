package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineCheckSaysWhereTheEngineCameFrom: doctor's engine line names the address and its
// source, also when the engine does not answer, and a broken context gets the context fix.
func TestEngineCheckSaysWhereTheEngineCameFrom(t *testing.T) {
	dead := "unix://" + filepath.Join(t.TempDir(), "dead.sock")
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONFIG", t.TempDir())

	cfg := validConfig()
	cfg.dockerHost = dead
	c := dockerDoctor(cfg, true).EngineCheck(t.Context())
	if c.OK || !strings.Contains(c.Detail, dead+" (from --docker-host)") || c.Optional {
		t.Errorf("got %+v, want a required failure naming %s from --docker-host", c, dead)
	}

	cfg.dockerHost = ""
	t.Setenv("DOCKER_CONTEXT", "nope")
	c = dockerDoctor(cfg, false).EngineCheck(t.Context())
	if c.OK || !strings.Contains(c.Detail, `context "nope" does not exist`) || !strings.Contains(c.Fix, "docker context use") || !c.Optional {
		t.Errorf("got %+v, want an optional failure naming the missing context with the context fix", c)
	}
}

// validConfig is the flags' defaults.
func validConfig() *config {
	cfg := &config{}
	fs := newFlags(nil)
	cfg.register(fs)
	return cfg
}
