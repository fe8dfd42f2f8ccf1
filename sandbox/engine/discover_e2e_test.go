//go:build e2e

package engine

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/internal/testengine"
)

// privateEngine starts a second dockerd of this machine (testengine) and stops it when the test
// ends. Without the prerequisites it skips loudly, or fails under CI=true.
func privateEngine(t *testing.T) *testengine.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	eng, err := testengine.StartDockerd(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the private engine does not start: %v", err)
		}
		t.Skipf("!!! SKIPPED: the private engine does not start here: %v", err)
	}
	t.Cleanup(func() {
		if err := eng.Stop(); err != nil {
			t.Errorf("stop %s: %v", eng.Name, err)
		}
	})
	return eng
}

// TestSecondEngineThroughContext: a Docker config made by the real docker CLI (context create +
// use) in a temp dir leads Discover to the second engine.
func TestSecondEngineThroughContext(t *testing.T) {
	eng := privateEngine(t)
	cfg := t.TempDir()
	dockerCLI(t, cfg, "context", "create", "second", "--docker", "host="+eng.Host)
	dockerCLI(t, cfg, "context", "use", "second")
	env := map[string]string{"DOCKER_CONFIG": cfg}
	ep, err := Discover(Lookup{Getenv: func(k string) string { return env[k] }, Home: t.TempDir()})
	if err != nil || ep.Host != eng.Host || ep.Context != "second" {
		t.Fatalf("got %+v %v, want the context second at %s", ep, err, eng.Host)
	}
	if !strings.Contains(ep.Source, "current context second") {
		t.Errorf("got source %q, want it to name the current context", ep.Source)
	}
	cli, err := NewClient(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.Info(t.Context(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(eng.Dir, "data"); info.Info.DockerRootDir != want {
		t.Errorf("reached the engine with root dir %s, want the second engine's %s", info.Info.DockerRootDir, want)
	}
}

// TestDiscoverMatchesDockerCLI compares Discover with `docker context inspect` for contexts the
// real CLI creates: a unix socket, TLS with verification, TLS without, and DOCKER_CONTEXT
// overriding the current context. No engine is needed.
func TestDiscoverMatchesDockerCLI(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no docker CLI: %v", err)
		}
		t.Skipf("!!! SKIPPED: no docker CLI: %v", err)
	}
	cfg := t.TempDir()
	pems := writeTestPEMs(t)
	dockerCLI(t, cfg, "context", "create", "sock", "--docker", "host=unix:///srv/engine/docker.sock")
	dockerCLI(t, cfg, "context", "create", "tls", "--docker", "host=tcp://10.0.0.1:2376,ca="+pems+"/ca.pem,cert="+pems+"/cert.pem,key="+pems+"/key.pem")
	dockerCLI(t, cfg, "context", "create", "insecure", "--docker", "host=tcp://10.0.0.2:2376,skip-tls-verify=true")
	dockerCLI(t, cfg, "context", "use", "tls")
	for _, tt := range []struct {
		name, envContext string
	}{{"tls", ""}, {"sock", "sock"}, {"insecure", "insecure"}} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"DOCKER_CONFIG": cfg, "DOCKER_CONTEXT": tt.envContext}
			ep, err := Discover(Lookup{Getenv: func(k string) string { return env[k] }, Home: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var inspect []struct {
				Name      string
				Endpoints map[string]struct {
					Host          string
					SkipTLSVerify bool
				}
				TLSMaterial map[string][]string
				Storage     struct{ TLSPath string }
			}
			if err := json.Unmarshal(dockerCLI(t, cfg, "context", "inspect", tt.name), &inspect); err != nil || len(inspect) != 1 {
				t.Fatalf("context inspect: %v", err)
			}
			want := inspect[0]
			if ep.Context != want.Name || ep.Host != want.Endpoints["docker"].Host {
				t.Errorf("got %s at %s, want %s at %s", ep.Context, ep.Host, want.Name, want.Endpoints["docker"].Host)
			}
			files := want.TLSMaterial["docker"]
			if tt.name == "tls" {
				if len(files) != 3 {
					t.Fatalf("the CLI stored TLS material %v, want ca, cert and key", files)
				}
				if cfg, err := ep.TLS.config(); err != nil || len(cfg.Certificates) != 1 || cfg.RootCAs == nil || cfg.InsecureSkipVerify {
					t.Errorf("TLS config from the context's material: %v", err)
				}
			}
			switch {
			case len(files) == 0 && !want.Endpoints["docker"].SkipTLSVerify:
				if ep.TLS != nil {
					t.Errorf("got TLS %+v, want none", ep.TLS)
				}
			case ep.TLS == nil:
				t.Errorf("got no TLS, want material %v skip-verify %v", files, want.Endpoints["docker"].SkipTLSVerify)
			default:
				if ep.TLS.Verify == want.Endpoints["docker"].SkipTLSVerify {
					t.Errorf("got verify %v, want skip-verify %v", ep.TLS.Verify, want.Endpoints["docker"].SkipTLSVerify)
				}
				dir := filepath.Join(want.Storage.TLSPath, "docker")
				for _, f := range files {
					if p := filepath.Join(dir, f); p != ep.TLS.CA && p != ep.TLS.Cert && p != ep.TLS.Key {
						t.Errorf("the CLI's %s is not among the TLS files %+v", p, ep.TLS)
					}
				}
			}
		})
	}
}

// dockerCLI runs the real docker CLI on a Docker config dir and returns its stdout.
func dockerCLI(t *testing.T, cfg string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+cfg)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// writeTestPEMs writes a self-signed CA (ca.pem) and a client certificate and key it signed
// (cert.pem, key.pem) into a temp dir, which the docker CLI accepts as context TLS material.
func writeTestPEMs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"ca.pem": {Type: "CERTIFICATE", Bytes: caDER}, "cert.pem": {Type: "CERTIFICATE", Bytes: der},
		"key.pem": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		writeTestFile(t, filepath.Join(dir, name), string(pem.EncodeToMemory(block)))
	}
	return dir
}
