package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
)

// machineIDScript is what the real CLI 3.0.65 runs through /bin/sh (several times per run,
// observed with strace) for its machine id; its stderr reaches the CLI's stderr.
const machineIDScript = "( cat /var/lib/dbus/machine-id /etc/machine-id 2> /dev/null || hostname ) | head -n 1 || :"

// runCommands executes each command through the shell like the real CLI (`/bin/bash -c`, in -c's
// directory, with the CLI's environment) and reports like b_run_commands_tool and the
// y_run_commands_* recordings: an empty "started" chunk per spawned command, then its stdout and
// stderr chunks (or an empty detachable chunk when there was no output); a command that could not
// be spawned gets no updates at all.
func (s *session) runCommands(c call, toolCallID string) []obj {
	execIDs := make([]string, len(c.commands))
	update := func(i int, stream, chunk string, detachable bool) {
		s.event(obj{{"type", "content_update"}, {"contentType", "tool"}, {"toolName", "run_commands"}, {"toolCallId", toolCallID},
			{"update", obj{{"stream", stream}, {"chunk", chunk}, {"executionId", execIDs[i]}, {"detachable", detachable}, {"commandIndex", i}, {"query", c.commands[i]}}}})
	}
	type ran struct {
		stdout, stderr string
		code           int
		spawnErr       error
	}
	runs := make([]ran, len(c.commands))
	for i, cmd := range c.commands {
		var out, errOut bytes.Buffer
		code, err := spawnShell(s.paths.workDir, cmd, &out, &errOut)
		runs[i] = ran{out.String(), errOut.String(), code, err}
	}
	for i := range c.commands {
		execIDs[i] = uuidV4()
		if runs[i].spawnErr == nil {
			update(i, "stdout", "", false)
		}
	}
	var results []obj
	for i, cmd := range c.commands {
		r := runs[i]
		if r.spawnErr != nil {
			results = append(results, obj{{"query", cmd}, {"result", ""}, {"error", "Command failed: Failed to execute command: " + spawnMessage(r.spawnErr)}, {"success", false}})
			continue
		}
		if r.stdout != "" {
			update(i, "stdout", r.stdout, false)
		}
		if r.stderr != "" {
			update(i, "stderr", r.stderr, false)
		}
		if r.stdout == "" && r.stderr == "" {
			update(i, "stdout", "", true)
		}
		results = append(results, commandResult(cmd, r.stdout, r.stderr, r.code))
	}
	return results
}

// commandResult is one element of run_commands' output as 3.0.65 builds it (read in its
// source): the output is stdout plus "\n[stderr]\n<stderr>" when there was any; a non-zero exit
// prefixes "[Command exited with code N]" and sets error and success:false.
func commandResult(query, stdout, stderr string, code int) obj {
	out := stdout
	if stderr != "" {
		out += "\n[stderr]\n" + stderr
	}
	if code == 0 {
		return obj{{"query", query}, {"result", out}, {"success", true}}
	}
	msg := "Command exited with code " + strconv.Itoa(code)
	result := "[" + msg + "]"
	if out != "" {
		result += "\n" + out
	}
	return obj{{"query", query}, {"result", result}, {"error", msg}, {"success", false}}
}

// builtin runs one command line with the built-in shell in this process (no /bin/bash needed)
// and returns its combined output and whether it exited 0. Probes use it to run git where the
// image has no shell of its own.
func (s *session) builtin(line string) (string, bool) {
	var out bytes.Buffer
	code := runScript(context.Background(), "sh", line, s.paths.workDir, os.Environ(), strings.NewReader(""), &out, &out)
	return out.String(), code == 0
}
