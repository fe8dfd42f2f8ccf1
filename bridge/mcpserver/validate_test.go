package mcpserver

import (
	"errors"
	"os"
	"path/filepath"
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

// The macOS layout ($TMPDIR under /var → /private/var) reproduced with a symlinked temp dir: the
// call's cwd comes out resolved, whether given absolute, relative, or as the server's own
// working dir, so git, mounts and the container's working dir all agree.
func TestCwdResolvedThroughSymlinks(t *testing.T) {
	real := t.TempDir()
	if err := os.MkdirAll(filepath.Join(real, "repo", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "var")
	if err := os.Symlink(real, link); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot create a symlink: %v", err)
		}
		t.Skipf("!!! SKIPPED: cannot create a symlink here: %v", err)
	}
	want, err := filepath.EvalSymlinks(filepath.Join(real, "repo", "sub"))
	if err != nil {
		t.Fatal(err)
	}
	viaLink := filepath.Join(link, "repo", "sub")
	v := validator{goos: "linux", floor: sandbox.IsolationHost, wd: func() (string, error) { return filepath.Join(link, "repo"), nil }}
	for name, args := range map[string]map[string]any{
		"absolute through the link": {"prompt": "hi there", "cwd": viaLink},
		"relative to a linked wd":   {"prompt": "hi there", "cwd": "sub"},
		"dotted":                    {"prompt": "hi there", "cwd": viaLink + "/../sub/."},
	} {
		call, err := v.call(run.ApplyClineEdits, args)
		if err != nil || call.Cwd != want {
			t.Errorf("%s: got %q, %v; want %q", name, call.Cwd, err, want)
		}
	}
	call, err := v.call(run.AskCline, map[string]any{"prompt": "hi there"})
	if wantWD, _ := filepath.EvalSymlinks(filepath.Join(real, "repo")); err != nil || call.Cwd != wantWD {
		t.Errorf("server's wd: got %q, %v; want %q", call.Cwd, err, wantWD)
	}
}
