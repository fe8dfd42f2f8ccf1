package run

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func touch(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
}

func TestClineResolver(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	touch(t, filepath.Join(bin, "cline"), 0o755)
	explicit := filepath.Join(dir, "explicit-cline")
	touch(t, explicit, 0o755)
	notExec := filepath.Join(dir, "not-exec")
	touch(t, notExec, 0o644)
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "gone"), dangling); err != nil {
		t.Fatal(err)
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	cases := []struct {
		name     string
		flag     string
		env      map[string]string
		want     string
		updating bool
		fails    bool
	}{
		{name: "flag wins", flag: explicit, env: map[string]string{"CLINE_MCP_CLINE": "/nope", "PATH": bin}, want: explicit},
		{name: "env next", env: map[string]string{"CLINE_MCP_CLINE": explicit, "PATH": bin}, want: explicit},
		{name: "dangling symlink is an update in progress", flag: dangling, updating: true, fails: true},
		{name: "not executable", flag: notExec, fails: true},
		{name: "missing explicit path", flag: filepath.Join(dir, "nope"), fails: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ClineResolver(c.flag, env(c.env), "linux")()
			if c.fails {
				var nf *notFoundError
				if !errors.As(err, &nf) || nf.updating != c.updating {
					t.Fatalf("got %q, %v; want a notFoundError with updating=%v", got, err, c.updating)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// On Windows npm installs a cline.cmd shim; the resolver runs the platform binary beside it.
func TestWindowsNpmLayout(t *testing.T) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		t.Skipf("no npm platform package name for %s", runtime.GOARCH)
	}
	npm := t.TempDir()
	touch(t, filepath.Join(npm, "cline.cmd"), 0o644)
	exe := filepath.Join(npm, "node_modules", "cline", "node_modules", "@cline", "cli-win32-"+arch, "bin", "cline.exe")
	touch(t, exe, 0o755)
	got, err := ClineResolver("", func(k string) string {
		if k == "PATH" {
			return npm
		}
		return ""
	}, "windows")()
	if err != nil || got != exe {
		t.Fatalf("got %q, %v; want %q", got, err, exe)
	}
}
