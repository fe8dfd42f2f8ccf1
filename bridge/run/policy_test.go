package run

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

func mkdirWithFile(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hook.sh"), []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAnalysisPolicyOfAttempt: a host analysis runs with the generated policy files (present
// while it runs, gone after), a repository that brings its own Cline hooks is refused on the
// host (launch_failed, nothing ran, not retried) and only reported in a container; an apply and
// the seed policy get no policy environment.
func TestAnalysisPolicyOfAttempt(t *testing.T) {
	policyVars := []string{"CLINE_GLOBAL_SETTINGS_PATH", "CLINE_MCP_SETTINGS_PATH", "CLINE_DIR", "CLINE_DATA_DIR"}
	t.Run("host analysis", func(t *testing.T) {
		s := pong(t)
		var seen []string
		h := newHarness(t)
		s.before = func(context.Context) {
			spec := h.cli.runs()[0]
			for _, v := range policyVars[:3] {
				p := envOf(spec, v)
				if _, err := os.Stat(p); err != nil || !strings.HasPrefix(p, h.tmp) {
					t.Errorf("%s=%q: not a file of the call's private dir: %v", v, p, err)
				}
				seen = append(seen, p)
			}
		}
		h.cli.steps = []step{s}
		h.cfg.Instance = "inst-1"
		untracked := false
		h.cfg.TrackDir = func(p string) func() {
			if !strings.HasPrefix(p, h.tmp) {
				t.Errorf("tracked %s, want the private dir", p)
			}
			return func() { untracked = true }
		}
		res := h.do(t.Context(), h.call(AskCline))
		wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
		if len(seen) != 3 || !untracked {
			t.Errorf("policy files %q, untracked %v", seen, untracked)
		}
		if got := envOf(h.cli.runs()[0], sandbox.InstanceEnv); got != "inst-1" {
			t.Errorf("%s=%q, want the instance", sandbox.InstanceEnv, got)
		}
	})
	t.Run("repository hooks on the host", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			h := newHarness(t)
			mkdirWithFile(t, filepath.Join(h.cwd, ".clinerules", "hooks"))
			res := h.do(t.Context(), h.call(AskCline))
			wantResult(t, res, result{kind: "launch_failed", attempts: 1, isolation: []sandbox.Isolation{host}})
			wantContains(t, "message", res.Message, `run the call with "isolation": "docker"`)
			wantEvents(t, h, "settings.Begin", "hold.End")
		})
	})
	t.Run("repository hooks in a container", func(t *testing.T) {
		h := newHarness(t, pong(t))
		mkdirWithFile(t, filepath.Join(h.cwd, ".cline", "plugins"))
		c := h.call(AskCline)
		c.Isolation = dock
		res := h.do(t.Context(), c)
		wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}})
		wantWarning(t, res, "ran inside the container")
		spec := h.cli.runs()[0]
		if p := envOf(spec, "CLINE_GLOBAL_SETTINGS_PATH"); !strings.HasPrefix(p, h.set.copies[0].dir) {
			t.Errorf("container policy %q is not in the settings copy", p)
		}
	})
	t.Run("user hooks are reported", func(t *testing.T) {
		h := newHarness(t, pong(t))
		mkdirWithFile(t, filepath.Join(h.cfg.Home, "Documents", "Cline", "Hooks"))
		res := h.do(t.Context(), h.call(AskCline))
		wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
		wantWarning(t, res, "your Cline hooks or plugins in")
	})
	for _, tc := range []struct {
		name string
		tool Tool
		seed bool
	}{{"apply", ApplyClineEdits, false}, {"seed policy", AskCline, true}} {
		t.Run(tc.name+" has no policy", func(t *testing.T) {
			h := newHarness(t, pong(t))
			h.cfg.SeedPolicy = tc.seed
			res := h.do(t.Context(), h.call(tc.tool))
			wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
			spec := h.cli.runs()[0]
			if slices.ContainsFunc(policyVars, func(v string) bool { return envOf(spec, v) != "" }) {
				t.Errorf("policy environment in %q", spec.Env)
			}
		})
	}
}

// TestNew: the dependencies are required; nil adapters stay nil so New reports them.
func TestNew(t *testing.T) {
	h := newHarness(t)
	if _, err := New(h.cfg); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Config){
		"settings":       func(c *Config) { c.Settings = StoreSettings(nil) },
		"worktrees":      func(c *Config) { c.Worktrees = ManagedWorktrees(nil) },
		"git":            func(c *Config) { c.Git = nil },
		"host":           func(c *Config) { c.Host = nil },
		"negative limit": func(c *Config) { c.MaxConcurrent = -1 },
	} {
		cfg := h.cfg
		mutate(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted the config", name)
		}
	}
}
