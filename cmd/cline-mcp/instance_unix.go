//go:build unix

package main

import (
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

func init() { dropInheritedInstance() }

// dropInheritedInstance re-executes this binary, before anything else runs, without a
// sandbox.InstanceEnv it inherited. That variable marks the processes of a server's runs, and
// everything a run starts inherits it — a CI job, or a `cline-mcp review` or server started
// from inside a run. A start-up sweep ends the processes whose marker names a dead server, and
// reads the marker from the environment the process was started with, which only a new exec
// changes. A cline-mcp is a live instance of its own with its own marker for its runs; carrying
// the inherited one, it would be taken for a leftover of that dead server and killed with its
// review half done. The pid and the start time (the instance id) stay the same across the exec.
// If the exec fails, the process runs on marked: the sweep may then take it, as before.
func dropInheritedInstance() {
	if _, ok := os.LookupEnv(sandbox.InstanceEnv); !ok {
		return
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, sandbox.InstanceEnv+"=") })
	if exe, err := os.Executable(); err == nil {
		_ = syscall.Exec(exe, os.Args, env)
	}
	_ = os.Unsetenv(sandbox.InstanceEnv)
}
