package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestWatchdogArgsAreServerFlags: the watchdog of `cline-mcp review` is handed the server's
// flags only, in every spelling (-f v, --f=v, a value that starts with "-"), and its own flag
// set accepts them: with a review flag among them it would exit at once.
func TestWatchdogArgsAreServerFlags(t *testing.T) {
	args := []string{"--cline", "/bin/cline", "--cwd", "/repo", "-timeout=5", "--isolation", "docker", "--prompt", "-x",
		"--docker-env", "A", "--fail-on=high", "-docker-env=B", "--format", "sarif", "--target", "base:main", "--out", "r.sarif", "--focus", "f"}
	got := watchdogArgs(args)
	want := []string{"--cline", "/bin/cline", "--isolation", "docker", "--docker-env", "A", "-docker-env=B"}
	if !slices.Equal(got, want) {
		t.Fatalf("watchdogArgs = %q, want %q", got, want)
	}
	var errb bytes.Buffer
	fs := newFlags(&errb)
	(&config{}).register(fs)
	if err := fs.Parse(got); err != nil || fs.NArg() != 0 {
		t.Errorf("the watchdog's flag set refuses %q: %v %s", got, err, errb.String())
	}
	if err := fs.Parse(args); err == nil || !strings.Contains(errb.String(), "-cwd") {
		t.Errorf("the control: the review's own flags were accepted by the server's flag set (%v)", err)
	}
}
