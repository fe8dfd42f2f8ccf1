package main

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// installTestVersion is the version the module is published as in the test's own module proxy.
const installTestVersion = "v0.0.1-installtest"

// TestGoInstallFromModuleProxy: `go install github.com/cline-mcp/cline-mcp/cmd/cline-mcp@<version>`
// works for a user: the module (this checkout's files, as the go command would zip them) is served
// by a module proxy laid out on disk, everything else comes from the local module cache or the
// real proxy, the checksum database is skipped for this module only, cgo is off, and the installed
// binary reports the version from its build info (no -ldflags).
func TestGoInstallFromModuleProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server with go install")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	const modPath = "github.com/cline-mcp/cline-mcp"
	publishModule(t, root, proxy, modPath, installTestVersion)

	env := func(name string) string {
		out, _ := exec.Command(goBin, "env", name).Output()
		return strings.TrimSpace(string(out))
	}
	upstream := env("GOPROXY")
	cache := filepath.ToSlash(filepath.Join(env("GOMODCACHE"), "cache", "download"))
	gobin := filepath.Join(tmp, "bin")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "install", modPath+"/cmd/cline-mcp@"+installTestVersion)
	cmd.Dir = tmp // outside any module
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+fileURLPath(proxy)+",file://"+fileURLPath(cache)+","+upstream,
		"GONOSUMDB="+modPath, "GONOSUMCHECK=1", "GOPRIVATE=", "GONOPROXY=", "GOWORK=off",
		"GOFLAGS=-modcacherw -mod=mod", "GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOBIN="+gobin, "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	exe := filepath.Join(gobin, "cline-mcp")
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	out, err := exec.CommandContext(ctx, exe, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "cline-mcp "+installTestVersion+" ") {
		t.Fatalf("%s --version: %v: %q, want cline-mcp %s", exe, err, out, installTestVersion)
	}
	info, err := exec.CommandContext(ctx, goBin, "version", "-m", exe).CombinedOutput()
	if err != nil || !strings.Contains(string(info), "CGO_ENABLED=0") ||
		!strings.Contains(string(info), "\tmod\t"+modPath+"\t"+installTestVersion) {
		t.Fatalf("go version -m: %v: want the module at %s, built without cgo:\n%s", err, installTestVersion, info)
	}
}

func fileURLPath(p string) string {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") { // C:/… on Windows
		p = "/" + p
	}
	return p
}

// publishModule lays out modPath@version in a GOPROXY directory: list, .info, .mod and the .zip
// made by golang.org/x/mod/zip (the go command's own rules) of the files git tracks or would
// track (untracked but not ignored), leaving out nested modules.
func publishModule(t *testing.T, root, proxy, modPath, version string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout?)", err)
	}
	var nested []string
	var names []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name != "go.mod" && filepath.Base(name) == "go.mod" {
			nested = append(nested, filepath.Dir(name)+"/")
		}
		names = append(names, name)
	}
	var files []modzip.File
	for _, name := range names {
		if st, err := os.Lstat(filepath.Join(root, name)); err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or not a regular file
		}
		inNested := false
		for _, n := range nested {
			inNested = inNested || strings.HasPrefix(name, n)
		}
		if !inNested {
			files = append(files, zipFile{root: root, name: name})
		}
	}
	dir := filepath.Join(proxy, modPath, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var zbuf bytes.Buffer
	if err := modzip.Create(&zbuf, module.Version{Path: modPath, Version: version}, files); err != nil {
		t.Fatalf("zip of the module: %v", err)
	}
	if _, err := zip.NewReader(bytes.NewReader(zbuf.Bytes()), int64(zbuf.Len())); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(gomod, []byte("\nreplace")) {
		t.Fatalf("go.mod has a replace directive: go install <module>@<version> refuses such a module")
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": fmt.Appendf(nil, `{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, version),
		version + ".mod":  gomod,
		version + ".zip":  zbuf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// zipFile is one file of the module zip.
type zipFile struct{ root, name string }

func (f zipFile) Path() string                 { return f.name }
func (f zipFile) Lstat() (os.FileInfo, error)  { return os.Lstat(filepath.Join(f.root, f.name)) }
func (f zipFile) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.root, f.name)) }
