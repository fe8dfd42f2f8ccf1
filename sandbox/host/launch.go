package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Hints shown to the user with a LaunchError; one sentence each.
const (
	hintMissing     = "install the Cline CLI (npm i -g cline) or pass --cline PATH"
	hintPermission  = "make it executable (chmod +x) or pass --cline PATH to the right file"
	hintDirectory   = "pass the path of the cline executable itself, not of a directory, with --cline PATH"
	hintInterpreter = "the program named on its #! line (usually node) is not installed or not on PATH; install it or pass --cline PATH to the platform binary"
	hintFormat      = "it is not a valid executable for this system; reinstall the Cline CLI (npm i -g cline) or pass --cline PATH"
	hintDir         = "pass an existing directory as the working directory"
)

// resolve checks what can be checked before starting — the working directory, the executable —
// and returns the path to exec. A bare name (no path separator) is looked up on the server's
// PATH, as exec.Command does; the bridge normally passes an absolute path.
func resolve(spec sandbox.Spec) (string, error) {
	if spec.Dir != "" {
		fi, err := os.Stat(spec.Dir)
		switch {
		case err != nil:
			return "", &sandbox.LaunchError{Op: "chdir", Hint: hintDir,
				Err: fmt.Errorf("working directory %s: %w", spec.Dir, err)}
		case !fi.IsDir():
			return "", &sandbox.LaunchError{Op: "chdir", Hint: hintDir,
				Err: fmt.Errorf("working directory %s: not a directory", spec.Dir)}
		}
	}
	if spec.Path == "" {
		return "", &sandbox.LaunchError{Op: "start", Hint: hintMissing, Missing: true,
			Err: errors.New("no executable given")}
	}
	path := spec.Path
	if !strings.ContainsAny(path, `/`+string(filepath.Separator)) {
		p, err := exec.LookPath(path)
		if err != nil {
			// Not found, not executable, or found only relative to "." (exec.ErrDot): in
			// every case there is no usable cline on PATH.
			return "", &sandbox.LaunchError{Op: "start", Hint: hintMissing, Missing: true,
				Err: fmt.Errorf("find %s on PATH: %w", path, err)}
		}
		return p, nil
	}
	if !filepath.IsAbs(path) {
		// os/exec would resolve a relative Path against Dir; a user's "--cline ./x" means
		// the server's working directory.
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &sandbox.LaunchError{Op: "start", Hint: hintMissing, Missing: true, Err: err}
	case err != nil:
		// Unreadable parent directory and the like: let Start report it precisely.
	case fi.IsDir():
		return "", &sandbox.LaunchError{Op: "start", Hint: hintDirectory,
			Err: fmt.Errorf("executable %s: is a directory", path)}
	}
	return path, nil
}

// classifyStart turns a Start error into a LaunchError when the user can fix it, else wraps it.
func classifyStart(spec sandbox.Spec, path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Either the file vanished since resolve (an npm update in progress) or it is a
		// script whose interpreter does not exist: the kernel says ENOENT for both.
		if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			return &sandbox.LaunchError{Op: "start", Hint: hintMissing, Missing: true, Err: err}
		}
		return &sandbox.LaunchError{Op: "start", Hint: hintInterpreter, Err: err}
	case errors.Is(err, fs.ErrPermission):
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return &sandbox.LaunchError{Op: "start", Hint: hintDirectory, Err: err}
		}
		return &sandbox.LaunchError{Op: "start", Hint: hintPermission, Err: err}
	case isBadFormat(err):
		return &sandbox.LaunchError{Op: "start", Hint: hintFormat, Err: err}
	}
	return fmt.Errorf("start %s: %w", spec.Path, err)
}
