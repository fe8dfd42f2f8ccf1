//go:build !windows

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellMode runs the fake under the names bash and sh, as the fake image does (/bin/bash
// and /bin/sh are copies of it), with the commands the real CLI gives its shell.
func TestShellMode(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"bash", "sh"} {
		if err := os.Symlink(fakeBin, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	host, _ := os.Hostname()
	tests := []struct {
		name, shell, script string
		code                int
		stdout, stderr      string // stdout exact unless "*"; stderr substring
	}{
		{"machine id falls back to hostname", "sh", "( cat /nonexistent/machine-id 2> /dev/null || hostname ) | head -n 1 || :", 0, host + "\n", ""},
		{"echo and exit status", "bash", "echo hi; false", 1, "hi\n", ""},
		{"missing program like bash", "bash", "no-such-program-x", 127, "", "line 1: no-such-program-x: command not found"},
		{"ls of a missing path like coreutils", "bash", "ls /nonexistent-dir", 2, "", "ls: cannot access '/nonexistent-dir': No such file or directory"},
		{"file programs relative to the directory", "bash", "mkdir d && touch d/f && cp d/f g && mv g h && ls d && cat h && rm -r d && ls", 0, "f\nh\n", ""},
		{"head -n", "bash", "printf 'a\\nb\\nc\\n' | head -n 2", 0, "a\nb\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(dir, tt.shell), "-c", tt.script)
			cmd.Dir = work
			cmd.Env = []string{"PATH=/nonexistent"}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || out.String() != tt.stdout || !strings.Contains(errb.String(), tt.stderr) {
				t.Errorf("got exit %d stdout %q stderr %q, want %d %q and stderr containing %q", code, out.String(), errb.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}
