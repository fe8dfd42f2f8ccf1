//go:build contract && linux

package contract

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/npmcache"
)

// cacheDir is where the pinned CLI is installed: $CLINE_MCP_CONTRACT_CACHE, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/cline-mcp/cline-<version>. Never inside the repository.
func cacheDir() (string, error) {
	if d := os.Getenv(envCache); d != "" {
		return filepath.Abs(d)
	}
	return npmcache.Dir("cline-" + clineVersion)
}

// installCLI returns the platform binary of cline@clineVersion, installing it with npm into
// the cache dir when it is not there yet (internal/npmcache: an interrupted install is never
// reused).
func installCLI(ctx context.Context) (string, error) {
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	if bin, err := platformBinary(ctx, dir); err == nil {
		return bin, nil
	}
	fmt.Fprintf(os.Stderr, "contract: installing cline@%s into %s (npm)\n", clineVersion, dir)
	start := time.Now()
	bin, err := npmcache.Install(ctx, dir, "cline@"+clineVersion, []string{"CLINE_NO_AUTO_UPDATE=1"}, platformBinary)
	if err == nil {
		fmt.Fprintf(os.Stderr, "contract: installed in %.1fs\n", time.Since(start).Seconds())
	}
	return bin, err
}

// platformBinary resolves node_modules/.bin/cline (a symlink to the Bun-compiled platform
// binary; docs/cline-cli.md "The installation": run that, not the Node wrapper) and checks `cline version`.
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
