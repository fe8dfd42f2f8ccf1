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
		if p := envOf(spec, "CLINE_GLOBAL_SETTINGS_PATH"); !strings.HasPrefix(p, h.set.copies[0].Dir) {
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
		"settings":       func(c *Config) { c.Settings = nil },
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

// TestAnalysisPolicyCoversTheCLIsWorkspace: the CLI runs the hooks and plugins of the
// repository's top or, when git cannot read the repository, of the run's directory (see the
// contract test TestAnalysisRefusesSubdirHooks), so a host analysis of a subdirectory is refused
// for code in that subdirectory as for code at the top, and a .git that git cannot use does not
// hide the top. A directory between the two is no candidate and is not refused.
func TestAnalysisPolicyCoversTheCLIsWorkspace(t *testing.T) {
	layout := func(t *testing.T, h *harness) (mid, sub string) {
		mkdirWithFile(t, filepath.Join(h.cwd, ".git"))
		if err := os.WriteFile(filepath.Join(h.cwd, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		mid = filepath.Join(h.cwd, "mid")
		sub = filepath.Join(mid, "sub")
		if err := os.MkdirAll(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		return mid, sub
	}
	for _, tc := range []struct {
		name    string
		plant   func(h *harness, mid, sub string) string // returns the code dir
		refused bool
	}{
		{"hooks in the run's directory", func(h *harness, mid, sub string) string {
			return filepath.Join(sub, ".clinerules", "hooks")
		}, true},
		{"plugins in the run's directory", func(h *harness, mid, sub string) string {
			return filepath.Join(sub, ".cline", "plugins")
		}, true},
		{"hooks at the top behind an unusable .git", func(h *harness, mid, sub string) string {
			if err := os.Mkdir(filepath.Join(mid, ".git"), 0o700); err != nil { // no HEAD: git looks further up
				t.Fatal(err)
			}
			return filepath.Join(h.cwd, ".cline", "hooks")
		}, true},
		{"hooks in a directory between", func(h *harness, mid, sub string) string {
			return filepath.Join(mid, ".cline", "hooks")
		}, false},
	} {
		t.Run(tc.name+" on the host", func(t *testing.T) {
			h := newHarness(t, pong(t))
			mid, sub := layout(t, h)
			code := tc.plant(h, mid, sub)
			mkdirWithFile(t, code)
			c := h.call(AskCline)
			c.Cwd = sub
			res := h.do(t.Context(), c)
			if !tc.refused {
				wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}})
				return
			}
			wantResult(t, res, result{kind: "launch_failed", attempts: 1, isolation: []sandbox.Isolation{host}})
			wantContains(t, "message", res.Message, code)
			if n := len(h.cli.runs()); n != 0 {
				t.Errorf("the CLI ran %d time(s)", n)
			}
		})
		if !tc.refused {
			continue
		}
		t.Run(tc.name+" in a container", func(t *testing.T) {
			h := newHarness(t, pong(t))
			mid, sub := layout(t, h)
			code := tc.plant(h, mid, sub)
			mkdirWithFile(t, code)
			c := h.call(AskCline)
			c.Cwd, c.Isolation = sub, dock
			res := h.do(t.Context(), c)
			wantResult(t, res, result{ok: true, attempts: 1, isolation: []sandbox.Isolation{dock}})
			wantWarning(t, res, code)
		})
	}
}
