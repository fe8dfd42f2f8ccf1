package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestSpareSpecHasTheCallsShape: a spare's spec is the call's with the settings copy's dir and the
// session data dir replaced everywhere they appear, and so has the shape of the next such call;
// nothing else changes.
func TestSpareSpecHasTheCallsShape(t *testing.T) {
	call := func(copyDir, data string) sandbox.Spec {
		return sandbox.Spec{Path: "/usr/local/bin/cline", Args: []string{"--acp"}, Dir: "/repo",
			Env: []string{"CLINE_DATA_DIR=" + data, "HOME=/home/cline", "X=" + copyDir + "/settings/policy.json"},
			Mounts: []sandbox.Mount{{Source: "/repo", Target: "/repo", ReadOnly: true},
				{Source: copyDir, Target: copyDir}, {Source: data, Target: data, Return: sandbox.Return{Tree: true}},
				{Source: copyDir + "/settings", Target: data + "/settings"}},
			Labels: map[string]string{"cline-mcp.tool": "ask_cline"}, NotWarm: true}
	}
	first := call("/tmp/cline-mcp-agent-1", "/s/data/aa")
	spare := respec(first, strings.NewReplacer("/tmp/cline-mcp-agent-1", "/tmp/cline-mcp-agent-2", "/s/data/aa", "/s/data/bb"))
	next := call("/tmp/cline-mcp-agent-3", "/s/data/cc")
	if shapeOf(spare, "/tmp/cline-mcp-agent-2", "/s/data/bb", "") != shapeOf(next, "/tmp/cline-mcp-agent-3", "/s/data/cc", "") {
		t.Errorf("the spare's shape differs from the next call's:\n%+v\n%+v", spare, next)
	}
	if shapeOf(first, "/tmp/cline-mcp-agent-1", "/s/data/aa", "") != shapeOf(next, "/tmp/cline-mcp-agent-3", "/s/data/cc", "") {
		t.Errorf("two calls alike but for their own dirs have different shapes")
	}
	if got := spare.Mounts[3]; got.Source != "/tmp/cline-mcp-agent-2/settings" || got.Target != "/s/data/bb/settings" {
		t.Errorf("the settings mount of the spare: %+v", got)
	}
	if spare.Env[0] != "CLINE_DATA_DIR=/s/data/bb" || first.Env[0] != "CLINE_DATA_DIR=/s/data/aa" {
		t.Errorf("env: the spare's %v, the call's %v (must stay)", spare.Env, first.Env)
	}
	other := call("/tmp/cline-mcp-agent-3", "/s/data/cc")
	other.Mounts[0].Source = "/other"
	if shapeOf(spare, "/tmp/cline-mcp-agent-2", "/s/data/bb", "") == shapeOf(other, "/tmp/cline-mcp-agent-3", "/s/data/cc", "") {
		t.Errorf("a call on another checkout has the spare's shape")
	}
}

// TestSnapshotDirRestores: the recorded settings copy comes back file for file with its modes;
// a tree with anything but directories and regular files (a link a run could have planted) is
// refused.
func TestSnapshotDirRestores(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "settings", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"settings/providers.json": `{"a":1}`, "settings/x/empty": "", "top": "t"} {
		if err := os.WriteFile(filepath.Join(src, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := snapshotDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := files.restore(dst); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"settings/providers.json": `{"a":1}`, "settings/x/empty": "", "top": "t"} {
		b, err := os.ReadFile(filepath.Join(dst, p))
		if err != nil || string(b) != c {
			t.Errorf("%s: %q, %v", p, b, err)
		}
		if fi, _ := os.Stat(filepath.Join(dst, p)); fi == nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", p, fi)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "settings", "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshotDir(src); err == nil {
		t.Errorf("a tree with a symbolic link was recorded")
	}
}
