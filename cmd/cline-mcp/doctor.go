package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
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
// prints secret values.
func doctor(ctx context.Context, cfg *config, out io.Writer) int {
	var checks []check
	add := func(c check) { checks = append(checks, c) }

	clinePath, err := run.ClineResolver(cfg.cline, os.Getenv, runtime.GOOS)()
	if err != nil {
		add(check{name: "cline executable", detail: err.Error(), fix: "install it with `npm install -g cline` and run `cline auth`, or pass --cline PATH / set CLINE_MCP_CLINE"})
	} else {
		v, verr := clineVersion(ctx, clinePath)
		if verr != nil {
			add(check{name: "cline executable", detail: fmt.Sprintf("%s does not answer `version`: %v", clinePath, verr), fix: "reinstall the CLI: npm install -g cline"})
		} else {
			add(check{name: "cline executable", ok: true, detail: fmt.Sprintf("%s (version %s)", clinePath, v)})
		}
	}

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

	dockerNeeded := cfg.isolation == "docker" || cfg.retryIsolation == "docker"
	add(dockerCheck(ctx, cfg, dockerNeeded))
	add(engineCheck(ctx, cfg, dockerNeeded))

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
