//go:build !windows

package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
)

// commandShell is the shell the real CLI runs commands with on Linux and macOS.
const commandShell = "/bin/bash"

// spawnShell runs `/bin/bash -c script` in dir with this process's environment. err is set only
// when the shell could not be started at all (the exit code is then meaningless).
func spawnShell(dir, script string, stdout, stderr io.Writer) (int, error) {
	cmd := exec.Command(commandShell, "-c", script)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ee.ExitCode() < 0 {
			return 128 + 9, nil // killed by a signal; bash would report 128+n
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}

// spawnMessage renders a failed spawn like Bun's posix_spawn error (y_run_commands_no_shell).
func spawnMessage(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "ENOENT: no such file or directory, posix_spawn '" + commandShell + "'"
	}
	if errors.Is(err, fs.ErrPermission) {
		return "EACCES: permission denied, posix_spawn '" + commandShell + "'"
	}
	return err.Error()
}

// probeMachineID runs the CLI's machine-id command through /bin/sh, passing its stderr on (a
// shell without cat, head or hostname shows there, as with the real CLI). Without /bin/sh it
// does nothing.
func probeMachineID() {
	cmd := exec.Command("/bin/sh", "-c", machineIDScript)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	_ = cmd.Run()
}
