//go:build windows

package main

import (
	"context"
	"io"
	"os"
	"strings"
)

// spawnShell interprets script with the built-in shell: Windows has no /bin/bash, and the fake
// is only ever run there by the cross-compilation checks.
func spawnShell(dir, script string, stdout, stderr io.Writer) (int, error) {
	return runScript(context.Background(), "bash", script, dir, os.Environ(), strings.NewReader(""), stdout, stderr), nil
}

func spawnMessage(err error) string { return err.Error() }

// probeMachineID does nothing on Windows.
func probeMachineID() {}
