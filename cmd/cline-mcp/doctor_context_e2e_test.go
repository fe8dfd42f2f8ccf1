//go:build e2e && linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// forwardEngine serves a unix socket at path that forwards every connection to the engine
// engine.Discover finds for this test process, and counts the connections.
func forwardEngine(t *testing.T, path string) *atomic.Int64 {
	t.Helper()
	home, _ := os.UserHomeDir()
	ep, err := engine.Discover(engine.Lookup{Getenv: os.Getenv, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	sock, ok := strings.CutPrefix(ep.Host, "unix://")
	if !ok || ep.TLS != nil {
		t.Skipf("the test forwards to a local unix socket; the engine is at %s", ep.Host)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				e, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer e.Close()
				done := make(chan struct{})
				go func() { _, _ = io.Copy(e, c); e.(*net.UnixConn).CloseWrite(); close(done) }()
				_, _ = io.Copy(c, e)
				c.(*net.UnixConn).CloseWrite()
				<-done
			}()
		}
	}()
	return &n
}

// writeContext writes a Docker config dir whose current context name has the engine at host.
func writeContext(t *testing.T, dir, name, host string) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	meta := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json")
	if err := os.MkdirAll(filepath.Dir(meta), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"Name": name, "Metadata": map[string]any{},
		"Endpoints": map[string]any{"docker": map[string]any{"Host": host, "SkipTLSVerify": false}}})
	if err := os.WriteFile(meta, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext":"`+name+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorDockerThroughContext: on a machine whose engine answers only through the current
// Docker context (DOCKER_HOST unset, the platform's default socket dead), every check of
// `doctor --isolation docker` talks to the context's engine and passes. The doctor runs in a
// private mount namespace in which the default socket is the null device; the control run
// without the context shows the default is dead there.
func TestDoctorDockerThroughContext(t *testing.T) {
	mcpsession.NeedDocker(t)
	unshare, err1 := exec.LookPath("unshare")
	mount, err2 := exec.LookPath("mount")
	sh, err3 := exec.LookPath("sh")
	if err1 != nil || err2 != nil || err3 != nil || os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root, unshare and mount for a private mount namespace")
		}
		t.Skip("needs root, unshare and mount for a private mount namespace")
	}
	bins, err := mcpsession.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := mcpsession.BuildFakeImage(bins); err != nil {
		t.Fatal(err)
	}
	sockDir := t.TempDir()
	conns := forwardEngine(t, filepath.Join(sockDir, "engine.sock"))
	withContext := t.TempDir()
	writeContext(t, withContext, "forwarded", "unix://"+filepath.Join(sockDir, "engine.sock"))

	home := t.TempDir()
	p := filepath.Join(home, ".cline", "data", "settings", "providers.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(mcpsession.ProvidersTwo), 0o600); err != nil {
		t.Fatal(err)
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	path := t.TempDir() // git only: no cline on PATH
	if err := os.Symlink(gitPath, filepath.Join(path, "git")); err != nil {
		t.Fatal(err)
	}
	def := strings.TrimPrefix(client.DefaultDockerHost, "unix://")
	// In its own mount namespace (private propagation: nothing leaks to the host), the default
	// socket becomes the null device, where a connect is refused.
	script := `[ ! -e "$1" ] || "$2" --bind /dev/null "$1" || exit 97; shift 2; exec "$@"`
	doctor := func(dockerConfig string) *exec.Cmd {
		cmd := exec.Command(unshare, "--mount", "--propagation", "private", sh, "-c", script, "sh", def, mount,
			bins.ClineMCP, "doctor", "--isolation", "docker", "--docker-image", mcpsession.FakeImage, "--docker-network", "none")
		cmd.Env = []string{"HOME=" + home, "PATH=" + path, "TMPDIR=" + t.TempDir(), "DOCKER_CONFIG=" + dockerConfig}
		return cmd
	}

	t.Run("control: the default socket is dead", func(t *testing.T) {
		out := runDoctor(t, doctor(t.TempDir()), 1, []string{"FAIL docker "}, nil)
		if strings.Contains(out, "OK   docker ") {
			t.Errorf("the doctor reached an engine without the context:\n%s", out)
		}
	})
	t.Run("every check through the context", func(t *testing.T) {
		before := conns.Load()
		runDoctor(t, doctor(withContext), 0, []string{
			"OK   docker ", "OK   docker engine      unix://" + filepath.Join(sockDir, "engine.sock") + " (from current context forwarded",
			"WARN docker network", "OK   cline in image", "OK   shell in image", "doctor: all required checks passed",
		}, nil)
		if conns.Load() == before {
			t.Error("no connection went through the context's socket")
		}
	})
	if ids, err := mcpsession.LabelledContainers("cline-mcp.doctor"); err != nil || len(ids) > 0 {
		t.Errorf("the doctor left containers behind: %v (%v)", ids, err)
	}
}
