package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// check is one doctor line: OK or FAIL with a fix. Optional failures do not change the exit
// status.
type check struct {
	name     string
	ok       bool
	detail   string
	fix      string
	optional bool
}

// doctor prints one OK/FAIL line per check and returns 1 when a required check failed. It never
// prints secret values. The host CLI is optional when the floor is docker; the Docker checks
// (engine and image, network, the CLI and the shell inside the image) are required when Docker
// isolation is configured and warnings otherwise.
func doctor(ctx context.Context, cfg *config, out io.Writer) int {
	var checks []check
	add := func(c check) { checks = append(checks, c) }

	// With the floor at docker every attempt runs in the image: the host CLI is not used.
	hostOptional := cfg.isolation == "docker" || cfg.isolation == "kubernetes"
	suffix := ""
	if hostOptional {
		suffix = " (not needed: --isolation " + cfg.isolation + " runs Cline in the image)"
	}
	clinePath, err := run.ClineResolver(cfg.cline, os.Getenv, runtime.GOOS)()
	version := ""
	if err != nil {
		add(check{name: "cline executable", detail: err.Error() + suffix, optional: hostOptional,
			fix: "install it with `npm install -g cline` and run `cline auth`, or pass --cline PATH / set CLINE_MCP_CLINE"})
	} else {
		v, verr := clineVersion(ctx, clinePath)
		if verr != nil {
			add(check{name: "cline executable", detail: fmt.Sprintf("%s does not answer `version`: %v%s", clinePath, verr, suffix),
				optional: hostOptional, fix: "reinstall the CLI: npm install -g cline"})
		} else {
			version = v
			add(check{name: "cline executable", ok: true, detail: fmt.Sprintf("%s (version %s)", clinePath, v)})
		}
	}
	checks = append(checks, policyChecks(version)...)

	home, _ := os.UserHomeDir()
	path := settings.Path(os.Getenv, home)
	add(settingsCheck(path))

	if gp, err := exec.LookPath("git"); err != nil {
		add(check{name: "git", detail: "git is not on PATH", fix: "install git (apply_cline_edits and ask_cline_workspace need it)"})
	} else if b, err := exec.CommandContext(ctx, gp, "--version").Output(); err != nil {
		add(check{name: "git", detail: err.Error(), fix: "reinstall git"})
	} else {
		add(check{name: "git", ok: true, detail: strings.TrimSpace(string(b))})
	}

	add(worktreeRootCheck(cfg.worktreeRoot))

	if cfg.container() == sandbox.IsolationKubernetes {
		checks = append(checks, k8sChecks(ctx, cfg)...)
	} else {
		dockerNeeded := cfg.isolation == "docker" || cfg.retryIsolation == "docker"
		engine := dockerCheck(ctx, cfg, dockerNeeded)
		add(engine)
		add(engineCheck(ctx, cfg, dockerNeeded))
		if engine.ok {
			checks = append(checks, imageChecks(ctx, cfg, dockerNeeded)...)
			add(egressCheck(ctx, cfg, !dockerNeeded))
		}
	}

	failed := false
	for _, c := range checks {
		status := "OK  "
		if !c.ok {
			status = "FAIL"
			if c.optional {
				status = "WARN"
			} else {
				failed = true
			}
		}
		fmt.Fprintf(out, "%s %-18s %s\n", status, c.name, c.detail)
		if !c.ok && c.fix != "" {
			fmt.Fprintf(out, "     %-18s fix: %s\n", "", c.fix)
		}
	}
	if failed {
		fmt.Fprintln(out, "doctor: some required checks failed")
		return 1
	}
	fmt.Fprintln(out, "doctor: all required checks passed")
	return 0
}

func clineVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version")
	cmd.Env = append(os.Environ(), "CLINE_NO_AUTO_UPDATE=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		return "", err
	}
	v := strings.TrimSpace(stdout.String())
	if v == "" {
		return "", fmt.Errorf("empty output")
	}
	return v, nil
}

// worktreeRootCheck reports a worktree root the server would not trust (not a private 0700
// directory of this user): ask_cline_workspace then fails and the sweeper leaves it alone.
func worktreeRootCheck(root string) check {
	m := &worktree.Manager{Root: root}
	if err := m.CheckRoot(); err != nil {
		return check{name: "worktree root", detail: err.Error(), fix: "chmod 700 the directory (or remove it; the server recreates it), or pass --worktree-root DIR"}
	}
	if root == "" {
		root = filepath.Join(os.TempDir(), worktree.DefaultRootName)
	}
	return check{name: "worktree root", ok: true, detail: root + " (private to this user, or created on first use)"}
}

// settingsCheck reads providers.json and reports the default provider without any secret.
func settingsCheck(path string) check {
	c := check{name: "cline settings"}
	b, err := os.ReadFile(path)
	if err != nil {
		c.detail = fmt.Sprintf("%s: %v", path, err)
		c.fix = "authenticate the CLI: cline auth (or set CLINE_PROVIDER_SETTINGS_PATH / CLINE_DATA_DIR)"
		return c
	}
	var doc struct {
		LastUsedProvider string                     `json:"lastUsedProvider"`
		Providers        map[string]json.RawMessage `json:"providers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		c.detail = fmt.Sprintf("%s is not valid JSON: %v", path, err)
		c.fix = "repair or remove the file, then run cline auth"
		return c
	}
	if len(doc.Providers) == 0 {
		c.detail = fmt.Sprintf("%s has no providers", path)
		c.fix = "run cline auth"
		return c
	}
	c.ok = true
	def := doc.LastUsedProvider
	if def == "" {
		def = "(none set; Cline falls back to `cline`)"
	}
	c.detail = fmt.Sprintf("%s (%d provider(s); default provider %s)", path, len(doc.Providers), def)
	return c
}
