//go:build contract && linux

package contract

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// cacheDir is where the pinned CLI is installed: $CLINE_MCP_CONTRACT_CACHE, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/cline-mcp/cline-<version>. Never inside the repository.
func cacheDir() (string, error) {
	if d := os.Getenv(envCache); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir() // honours XDG_CACHE_HOME, else $HOME/.cache
	if err != nil {
		return "", fmt.Errorf("no cache directory: %w", err)
	}
	return filepath.Join(base, "cline-mcp", "cline-"+clineVersion), nil
}

// installCLI returns the platform binary of cline@clineVersion, installing it with npm into
// the cache dir when it is not there yet. The install goes to a sibling directory that is
// renamed into place only after `cline version` answered, so an interrupted install is never
// reused.
func installCLI(ctx context.Context) (string, error) {
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	if bin, err := platformBinary(ctx, dir); err == nil {
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
	// installs from npm's own cache without revalidating (offline with a warm cache: ~20 s
	// instead of minutes of failing metadata requests).
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", tmp, "--prefer-offline", "--save-exact", "--no-audit", "--no-fund",
		"--loglevel=error", "--fetch-retries=1", "--fetch-retry-mintimeout=1000", "--fetch-retry-maxtimeout=3000",
		"--fetch-timeout=60000", "cline@"+clineVersion)
	cmd.Env = append(os.Environ(), "CLINE_NO_AUTO_UPDATE=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	fmt.Fprintf(os.Stderr, "contract: installing cline@%s into %s (npm)\n", clineVersion, dir)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install cline@%s: %v\n%s", clineVersion, err, tail(out.String(), 2000))
	}
	if _, err := platformBinary(ctx, tmp); err != nil {
		return "", fmt.Errorf("after npm install: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "contract: installed in %.1fs\n", time.Since(start).Seconds())
	return platformBinary(ctx, dir)
}

// platformBinary resolves node_modules/.bin/cline (a symlink to the Bun-compiled platform
// binary; FINDINGS §6: run that, not the Node wrapper) and checks `cline version`.
func platformBinary(ctx context.Context, prefix string) (string, error) {
	bin, err := filepath.EvalSymlinks(filepath.Join(prefix, "node_modules", ".bin", "cline"))
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "version")
	cmd.Env = append(os.Environ(), "CLINE_NO_AUTO_UPDATE=1")
	cmd.Stdin = nil
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w", bin, err)
	}
	if v := strings.TrimSpace(string(b)); v != clineVersion {
		return "", fmt.Errorf("%s is version %q, want %s", bin, v, clineVersion)
	}
	return bin, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
