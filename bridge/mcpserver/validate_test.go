package mcpserver

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

func testValidator(goos string, floor sandbox.Isolation) validator {
	return validator{goos: goos, floor: floor, wd: os.Getwd}
}

// The Windows limits are the seed's, counted in UTF-16 code units as Node and Windows do; they
// are testable on Linux through the injected platform.
func TestWindowsPromptLimits(t *testing.T) {
	cwd := t.TempDir()
	emoji := "😀" // two UTF-16 code units
	cases := []struct {
		name         string
		prompt, sys  string
		windowsField string // "" = accepted on Windows
	}{
		{"prompt at the limit", strings.Repeat("a", 19999) + " ", "", ""},
		{"prompt over the limit", strings.Repeat("a", 20000) + " ", "", "prompt"},
		{"surrogate pairs count twice", strings.Repeat(emoji, 10000) + " ", "", "prompt"},
		{"system prompt at the limit", "hi there", strings.Repeat("s", 8000), ""},
		{"system prompt over the limit", "hi there", strings.Repeat("s", 8001), "systemPrompt"},
		{"together over the limit", strings.Repeat("a", 17000) + " ", strings.Repeat("s", 7000), "together"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"prompt": c.prompt, "cwd": cwd}
			if c.sys != "" {
				args["systemPrompt"] = c.sys
			}
			if _, err := testValidator("linux", sandbox.IsolationHost).call(run.AskCline, args); err != nil {
				t.Errorf("linux: got %v, want no limit", err)
			}
			_, err := testValidator("windows", sandbox.IsolationHost).call(run.AskCline, args)
			switch {
			case c.windowsField == "" && err != nil:
				t.Errorf("windows: got %v, want accepted", err)
			case c.windowsField != "" && (err == nil || !strings.Contains(err.Error(), c.windowsField)):
				t.Errorf("windows: got %v, want a rejection naming %q", err, c.windowsField)
			}
		})
	}
}

func TestValidatorDefaultsAndFloor(t *testing.T) {
	cwd := t.TempDir()
	call, err := testValidator("linux", sandbox.IsolationHost).call(run.AskCline, map[string]any{"prompt": "hi there", "cwd": cwd})
	if err != nil {
		t.Fatal(err)
	}
	if call.Thinking != "none" || call.TimeoutSeconds != 180 || call.Isolation != "" {
		t.Errorf("defaults: got thinking %q timeout %d isolation %q", call.Thinking, call.TimeoutSeconds, call.Isolation)
	}
	for _, bad := range []map[string]any{
		{"prompt": "hi there", "cwd": cwd, "thinking": ""},
		{"prompt": "hi there", "cwd": cwd, "isolation": "host"}, // weaker than a docker floor
	} {
		_, err := testValidator("linux", sandbox.IsolationDocker).call(run.AskCline, bad)
		var ia *invalidArg
		if !errors.As(err, &ia) {
			t.Errorf("%v: got %v, want an invalid-argument error", bad, err)
		}
	}
	// A relative cwd is resolved against the server's working directory.
	call, err = validator{goos: "linux", floor: sandbox.IsolationHost, wd: func() (string, error) { return cwd, nil }}.
		call(run.AskCline, map[string]any{"prompt": "hi there", "cwd": "."})
	if err != nil || call.Cwd != cwd {
		t.Errorf("relative cwd: got %q, %v; want %q", call.Cwd, err, cwd)
	}
}
