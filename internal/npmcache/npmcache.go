// Package npmcache installs a pinned npm package into a cache directory outside the repository,
// for test suites that run real npm-distributed programs (the Cline CLI, Claude Code). For tests
// only.
package npmcache

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Dir is ${XDG_CACHE_HOME:-$HOME/.cache}/cline-mcp/<name>.
func Dir(name string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %w", err)
	}
	return filepath.Join(base, "cline-mcp", name), nil
}

// Install returns find(dir) when it succeeds; otherwise it runs `npm install <spec>` into a
// sibling directory, checks it with find, and renames it into place, so an interrupted or
// broken install is never reused. find locates (and checks) the program under an install
// prefix. env is added to npm's environment.
func Install(ctx context.Context, dir, spec string, env []string, find func(ctx context.Context, prefix string) (string, error)) (string, error) {
	if bin, err := find(ctx, dir); err == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not on PATH: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".partial-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// Short network retries: offline, npm must give up in seconds, not minutes. --prefer-offline
	// installs from npm's own cache without revalidating.
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", tmp, "--prefer-offline", "--save-exact", "--no-audit", "--no-fund",
		"--loglevel=error", "--fetch-retries=1", "--fetch-retry-mintimeout=1000", "--fetch-retry-maxtimeout=3000",
		"--fetch-timeout=60000", spec)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install %s: %v\n%s", spec, err, tail(string(out), 2000))
	}
	if _, err := find(ctx, tmp); err != nil {
		return "", fmt.Errorf("after npm install %s: %w", spec, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return find(ctx, dir)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
