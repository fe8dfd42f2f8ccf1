package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
)

// TestMain doubles as the lifeline watchdog: serve re-executes its own binary (here, the test
// binary) as `<exe> watchdog ...`, which must act as the watchdog, not run the tests again.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == watchdogCommand {
		os.Exit(realMain(os.Args[1:], strings.NewReader(""), io.Discard, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestCommandLine(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		code     int
		stdout   string // substring
		stderr   string // substring
		noStdout bool
	}{
		{name: "help flag", args: []string{"--help"}, code: 0, stdout: "Usage:"},
		{name: "help command", args: []string{"help"}, code: 0, stdout: "-isolation"},
		{name: "doctor help", args: []string{"doctor", "-h"}, code: 0, stdout: "cline-mcp doctor"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "cline-mcp "},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: "unknown command", noStdout: true},
		{name: "unknown flag", args: []string{"--no-such-flag"}, code: 2, stderr: "no-such-flag", noStdout: true},
		{name: "bad isolation", args: []string{"--isolation", "vm"}, code: 2, stderr: "--isolation", noStdout: true},
		{name: "bad memory", args: []string{"--docker-memory", "lots"}, code: 2, stderr: "--docker-memory", noStdout: true},
		{name: "pool too large", args: []string{"--workspace-pool", "17"}, code: 2, stderr: "--workspace-pool must be between 0 and 16", noStdout: true},
		{name: "pool idle too short", args: []string{"--workspace-pool", "1", "--workspace-pool-idle", "10ms"}, code: 2, stderr: "--workspace-pool-idle", noStdout: true},
		{name: "stray argument", args: []string{"serve", "extra"}, code: 2, stderr: "unexpected arguments", noStdout: true},
		{name: "container network without open egress", args: []string{"--docker-network", "container:x"}, code: 2, stderr: "--docker-egress open", noStdout: true},
		{name: "provider egress without a network", args: []string{"--docker-egress", "provider", "--docker-network", "none"}, code: 2, stderr: "--docker-egress provider", noStdout: true},
		{name: "bad egress mode", args: []string{"--docker-egress", "some"}, code: 2, stderr: "--docker-egress", noStdout: true},
		{name: "bad egress endpoint", args: []string{"--egress-allow", "api.example.com"}, code: 2, stderr: "--egress-allow", noStdout: true},
		{name: "egress allow without provider", args: []string{"--docker-egress", "open", "--egress-allow", "a.example.com:443"}, code: 2, stderr: "--egress-allow applies", noStdout: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := realMain(c.args, strings.NewReader(""), &out, &errOut)
			if code != c.code {
				t.Errorf("got exit %d, want %d (stderr %q)", code, c.code, errOut.String())
			}
			if c.stdout != "" && !strings.Contains(out.String(), c.stdout) {
				t.Errorf("stdout %q lacks %q", out.String(), c.stdout)
			}
			if c.stderr != "" && !strings.Contains(errOut.String(), c.stderr) {
				t.Errorf("stderr %q lacks %q", errOut.String(), c.stderr)
			}
			// A misconfigured server must not write anything to stdout, the MCP wire.
			if c.noStdout && out.Len() > 0 {
				t.Errorf("wrote to stdout on an error: %q", out.String())
			}
		})
	}
}

// TestServeWritesOnlyJSONRPC: an empty session (stdin closed at once) exits 0 and writes
// nothing that is not JSON-RPC to stdout; logs go to stderr.
func TestServeEmptySession(t *testing.T) {
	var out, errOut bytes.Buffer
	code := realMain([]string{"--cline", "/nonexistent/cline"}, strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("got exit %d, want 0; stderr %q", code, errOut.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout got %q for an empty session, want nothing", out.String())
	}
	if !strings.Contains(errOut.String(), "serving MCP on stdio") {
		t.Errorf("stderr lacks the start log: %q", errOut.String())
	}
}

// TestDockerRefusedOnWindows plays a Windows host: a call that asks for Docker isolation is
// launch_failed with the way out (WSL2), and the engine is never contacted.
func TestDockerRefusedOnWindows(t *testing.T) {
	orig := hostGOOS
	t.Cleanup(func() { hostGOOS = orig })
	hostGOOS = "windows"

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- realMain([]string{"--cline", "/nonexistent/cline"}, inR, outW, &errOut)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if !lines.Scan() {
		t.Fatalf("no initialize response; stderr %s", errOut.String())
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_cline","arguments":{"prompt":"hello there","isolation":"docker"}}}`)
	if !lines.Scan() {
		t.Fatalf("no tools/call response; stderr %s", errOut.String())
	}
	var resp struct {
		Result struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(lines.Bytes(), &resp); err != nil {
		t.Fatalf("response %s: %v", lines.Text(), err)
	}
	sc := resp.Result.StructuredContent
	msg, _ := sc["message"].(string)
	if !resp.Result.IsError || sc["kind"] != "launch_failed" || !strings.Contains(msg, "Windows") || !strings.Contains(msg, "WSL2") {
		t.Errorf("got isError %v kind %v message %q, want launch_failed naming Windows and WSL2", resp.Result.IsError, sc["kind"], msg)
	}
	inW.Close()
	if code := <-done; code != 0 {
		t.Errorf("server exit %d, want 0", code)
	}
}
