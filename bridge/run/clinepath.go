package run

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// notFoundError is a Cline executable that cannot be found. updating is set when a file of
// that name exists but cannot be executed because its target vanished (npm replaces the
// package in place during `npm update -g cline`), which deserves one retry.
type notFoundError struct {
	what     string
	updating bool
	err      error
}

func (e *notFoundError) Error() string {
	if e.updating {
		return fmt.Sprintf("%s exists but its target is missing: %v", e.what, e.err)
	}
	return fmt.Sprintf("%s: %v (install the Cline CLI with `npm install -g cline` and authenticate it with `cline auth`, "+
		"or point the server at it with --cline PATH or CLINE_MCP_CLINE)", e.what, e.err)
}

func (e *notFoundError) Unwrap() error { return e.err }

// ClineResolver returns the executable lookup docs/behaviour.md documents ("How Cline is run"): flagPath (--cline), else
// $CLINE_MCP_CLINE, else `cline` (`cline.exe` on Windows) on PATH. It runs per call.
func ClineResolver(flagPath string, getenv func(string) string, goos string) func() (string, error) {
	name := "cline"
	if goos == "windows" {
		name = "cline.exe"
	}
	return func() (string, error) {
		explicit, what := flagPath, "--cline "+flagPath
		if explicit == "" {
			if v := getenv("CLINE_MCP_CLINE"); v != "" {
				explicit, what = v, "CLINE_MCP_CLINE="+v
			}
		}
		if explicit != "" {
			return checkExecutable(explicit, what)
		}
		p, err := exec.LookPath(name)
		if err == nil {
			abs, aerr := filepath.Abs(p)
			if aerr != nil {
				return p, nil
			}
			return abs, nil
		}
		if goos == "windows" {
			// npm on Windows installs a cline.cmd shim (a batch file run by cmd.exe); the
			// platform binary beside it is what the bridge runs, so its Job Object holds Cline.
			if p, ok := windowsNpmBinary(getenv("PATH")); ok {
				return p, nil
			}
		}
		// A dangling symlink on PATH is an update in progress, not a missing install.
		for _, dir := range filepath.SplitList(getenv("PATH")) {
			if dir == "" {
				continue
			}
			cand := filepath.Join(dir, name)
			if _, lerr := os.Lstat(cand); lerr == nil {
				if _, serr := os.Stat(cand); serr != nil {
					return "", &notFoundError{what: cand, updating: true, err: serr}
				}
			}
		}
		return "", &notFoundError{what: fmt.Sprintf("%q was not found on PATH", name), err: err}
	}
}

func checkExecutable(p, what string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", &notFoundError{what: what, err: err}
	}
	st, err := os.Stat(abs)
	if err != nil {
		if _, lerr := os.Lstat(abs); lerr == nil && errors.Is(err, os.ErrNotExist) {
			return "", &notFoundError{what: what, updating: true, err: err}
		}
		return "", &notFoundError{what: what, err: err}
	}
	if st.IsDir() {
		return "", &notFoundError{what: what, err: errors.New("is a directory, not the Cline executable")}
	}
	if st.Mode()&0o111 == 0 && !strings.EqualFold(filepath.Ext(abs), ".exe") {
		return "", &notFoundError{what: what, err: errors.New("is not executable (chmod +x it)")}
	}
	return abs, nil
}

// windowsNpmBinary finds the platform binary of an npm-installed Cline next to a cline.cmd shim
// on PATH: <dir>/node_modules/cline/node_modules/@cline/cli-win32-<arch>/bin/cline.exe (or the
// hoisted <dir>/node_modules/@cline/...). The package layout mirrors the Linux one (@cline/cli-linux-x64,
// docs/cline-cli.md "The installation"); it is not verified on Windows.
func windowsNpmBinary(path string) (string, bool) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		return "", false
	}
	pkg := filepath.Join("@cline", "cli-win32-"+arch, "bin", "cline.exe")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, "cline.cmd")); err != nil || st.IsDir() {
			continue
		}
		for _, cand := range []string{
			filepath.Join(dir, "node_modules", "cline", "node_modules", pkg),
			filepath.Join(dir, "node_modules", pkg),
		} {
			if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() {
				return cand, true
			}
		}
	}
	return "", false
}
