//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/clientconfig"
)

// setupSubprocessEnv carries the arguments of `cline-mcp setup` to TestSetupSubprocess.
const setupSubprocessEnv = "CLINE_MCP_TEST_SETUP_ARGS"

// TestSetupSubprocess is `cline-mcp setup` in a process of its own (run by runSetupProcess);
// otherwise it does nothing.
func TestSetupSubprocess(t *testing.T) {
	raw := os.Getenv(setupSubprocessEnv)
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(realMain(append([]string{"setup"}, args...), strings.NewReader(""), os.Stdout, os.Stderr))
}

// runSetupProcess runs `cline-mcp setup args...` as a subprocess (this test binary) under a
// deadline, so a setup that blocks fails the test instead of hanging it.
func runSetupProcess(t *testing.T, home string, args ...string) (code int, stderr string) {
	t.Helper()
	raw, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSetupSubprocess$")
	cmd.Env = append(os.Environ(), setupSubprocessEnv+"="+string(raw), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("setup %q did not return within its deadline: it blocked\n%s", args, errb.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), errb.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, errb.String()
}

// TestSetupRefusesSpecialConfigFiles: `setup --config` names a FIFO (which a plain open would
// wait on forever), a directory, a device, a socket, a file larger than the bound, a symlink to
// a FIFO or to a device, or a dangling symlink: each is refused promptly with an error naming
// what it is, and nothing is written. The marker: the same command with a symlinked regular
// file (a dotfile kept in a repository) does write the entry into the file the link names, and
// the link stays a link.
func TestSetupRefusesSpecialConfigFiles(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "dotfiles", "claude.json")
	if err := os.MkdirAll(filepath.Dir(real), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(`{"theme": "dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, ".claude.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if code, stderr := runSetupProcess(t, home, "claude-code", "--config", link); code != 0 {
		t.Fatalf("setup through a symlinked regular file: exit %d\n%s", code, stderr)
	}
	b, _ := os.ReadFile(real)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 || !strings.Contains(string(b), `"mcpServers"`) || !strings.Contains(string(b), `"theme"`) {
		t.Fatalf("the symlinked file was not edited in place (link %v %v): %s", fi, err, b)
	}

	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.json")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(clientconfig.MaxFileBytes + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	fifoLink, devLink, dangling := filepath.Join(dir, "fifo-link.json"), filepath.Join(dir, "zero-link.json"), filepath.Join(dir, "dangling.json")
	for target, l := range map[string]string{fifo: fifoLink, "/dev/zero": devLink, filepath.Join(dir, "nowhere", "x.json"): dangling} {
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]string{
		fifo: "FIFO", fifoLink: "FIFO", filepath.Join(dir, "dotfiles"): "directory", "/dev/zero": "device", devLink: "device",
		sock: "socket", huge: "larger than", dangling: "symlink",
	} {
		code, stderr := runSetupProcess(t, home, "claude-code", "--config", path)
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("setup --config %s: exit %d, stderr %q; want an error saying %q", path, code, stderr, want)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi, err)
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the dangling symlink was replaced: %v %v", fi, err)
	}
}
