package ci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRelease is a release page on loopback, laid out as GitHub's: <url>/download/<tag>/<asset>
// and <url>/latest/download/<asset>, with the archive goreleaser makes for this machine
// (cline-mcp, ci/gate.sh, README.md) and checksums.txt.
type fakeRelease struct {
	srv   *httptest.Server
	tag   string
	asset string
	files map[string][]byte
	mu    sync.Mutex
	got   []string
}

var (
	archiveOnce sync.Once
	archive     []byte
	archiveErr  error
)

func newFakeRelease(t *testing.T, tag string, tamper bool) *fakeRelease {
	t.Helper()
	b := binaries(t)
	archiveOnce.Do(func() { archive, archiveErr = buildArchive(b.ClineMCP, script(t, "ci/gate.sh")) })
	if archiveErr != nil {
		t.Fatal(archiveErr)
	}
	arch := runtime.GOARCH
	asset := fmt.Sprintf("cline-mcp_%s_%s.tar.gz", runtime.GOOS, arch)
	sum := sha256.Sum256(archive)
	if tamper {
		sum[0] ^= 0xff // the archive is not the one the checksums name
	}
	other := sha256.Sum256([]byte("other"))
	checksums := fmt.Sprintf("%s  cline-mcp_windows_%s.zip\n%s  %s\n", hex.EncodeToString(other[:]), arch, hex.EncodeToString(sum[:]), asset)
	r := &fakeRelease{tag: tag, asset: asset, files: map[string][]byte{asset: archive, "checksums.txt": []byte(checksums)}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, req.URL.Path)
		r.mu.Unlock()
		for _, prefix := range []string{"/download/" + tag + "/", "/latest/download/"} {
			if name, ok := strings.CutPrefix(req.URL.Path, prefix); ok && r.files[name] != nil {
				_, _ = w.Write(r.files[name])
				return
			}
		}
		http.NotFound(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// downloads are the paths asked for so far.
func (r *fakeRelease) downloads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// buildArchive is the release archive: the binary and the gate at their release paths.
func buildArchive(binary, gate string) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for name, src := range map[string]string{"cline-mcp": binary, "ci/gate.sh": gate} {
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(b)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	readme := []byte("cline-mcp\n")
	if err := tw.WriteHeader(&tar.Header{Name: "README.md", Mode: 0o644, Size: int64(len(readme)), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(readme); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TestInstall: install.sh installs the release archive of a version only when its SHA-256 is
// the one checksums.txt names; a tampered archive, a malformed version and a plain-HTTP
// release page elsewhere than loopback are refused, and nothing is installed.
func TestInstall(t *testing.T) {
	needTools(t)
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("release archives exist for Linux and macOS")
	}
	install := func(t *testing.T, vars map[string]string) (int, string, string, string) {
		w := newWorld(t)
		dir := filepath.Join(w.root, "bin")
		env := map[string]string{"GATE_INSTALL_DIR": dir, "GITHUB_OUTPUT": filepath.Join(w.root, "out")}
		for k, v := range vars {
			env[k] = v
		}
		cmd := exec.Command("bash", script(t, "ci/install.sh"))
		cmd.Dir, cmd.Env = w.root, w.env(env)
		code, stdout, stderr := run(t, cmd, 2*time.Minute)
		return code, stdout, stderr + "\n" + strings.Join(mapLines(outputs(t, env["GITHUB_OUTPUT"])), "\n"), dir
	}
	t.Run("pinned version", func(t *testing.T) {
		rel := newFakeRelease(t, "v9.9.9", false)
		code, stdout, stderr, dir := install(t, map[string]string{"GATE_VERSION": "v9.9.9", "GATE_RELEASE_URL": rel.srv.URL})
		bin := filepath.Join(dir, "cline-mcp")
		if code != 0 || strings.TrimSpace(stdout) != bin || !strings.Contains(stderr, "binary="+bin) {
			t.Fatalf("exit %d, stdout %q\n%s", code, stdout, stderr)
		}
		if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil {
			t.Errorf("the installed binary: %v %s", err, out)
		}
		if got := strings.Join(rel.downloads(), ","); got != "/download/v9.9.9/"+rel.asset+",/download/v9.9.9/checksums.txt" {
			t.Errorf("downloads %s", got)
		}
	})
	t.Run("latest", func(t *testing.T) {
		rel := newFakeRelease(t, "v9.9.9", false)
		code, _, stderr, _ := install(t, map[string]string{"GATE_RELEASE_URL": rel.srv.URL})
		if code != 0 || !strings.HasPrefix(strings.Join(rel.downloads(), ","), "/latest/download/") {
			t.Fatalf("exit %d, downloads %v\n%s", code, rel.downloads(), stderr)
		}
	})
	refused := []struct{ name, want string }{{"tampered archive", "does not match checksums.txt"}, {"bad version", "version must be"}, {"plain http", "release-url must be https"}}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			rel := newFakeRelease(t, "v9.9.9", c.name == "tampered archive")
			vars := map[string]string{"GATE_VERSION": "v9.9.9", "GATE_RELEASE_URL": rel.srv.URL}
			switch c.name {
			case "bad version":
				vars["GATE_VERSION"] = "v1.0.0;id"
			case "plain http":
				vars["GATE_RELEASE_URL"] = "http://example.com/releases"
			}
			code, _, stderr, dir := install(t, vars)
			if code == 0 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "binary=") {
				t.Errorf("exit %d, want a refusal saying %q\n%s", code, c.want, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "cline-mcp")); err == nil {
				t.Errorf("a binary was installed")
			}
		})
	}
}

func mapLines(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}
