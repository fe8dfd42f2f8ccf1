package engine

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// contextStore writes a Docker config dir with config.json (current context cur) and one
// context per name → host, the way `docker context create` lays it out.
func contextStore(t *testing.T, cur string, contexts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if cur != "" {
		writeTestFile(t, filepath.Join(dir, "config.json"), `{"auths":{},"currentContext":"`+cur+`"}`)
	}
	for name, host := range contexts {
		meta := `{"Name":"` + name + `","Metadata":{"Description":""},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
		writeTestFile(t, filepath.Join(dir, "contexts", "meta", contextID(name), "meta.json"), meta)
	}
	return dir
}

func TestDiscoverPrecedence(t *testing.T) {
	store := contextStore(t, "colima", map[string]string{"colima": "unix:///home/u/.colima/docker.sock", "ci": "tcp://docker:2375"})
	noSockets := func(string) bool { return false }
	tests := []struct {
		name       string
		flag       string
		env        map[string]string
		isSocket   func(string) bool
		wantHost   string
		wantSource string
		wantErr    string
	}{
		{"flag wins over everything", "tcp://flag:2375", map[string]string{"DOCKER_HOST": "tcp://env:2375", "DOCKER_CONTEXT": "ci", "DOCKER_CONFIG": store}, nil, "tcp://flag:2375", "--docker-host", ""},
		{"DOCKER_HOST over contexts", "", map[string]string{"DOCKER_HOST": "tcp://env:2375", "DOCKER_CONTEXT": "ci", "DOCKER_CONFIG": store}, nil, "tcp://env:2375", "DOCKER_HOST", ""},
		{"DOCKER_CONTEXT over the current context", "", map[string]string{"DOCKER_CONTEXT": "ci", "DOCKER_CONFIG": store}, nil, "tcp://docker:2375", "DOCKER_CONTEXT=ci", ""},
		{"current context of config.json", "", map[string]string{"DOCKER_CONFIG": store}, nil, "unix:///home/u/.colima/docker.sock", "current context colima", ""},
		{"DOCKER_CONTEXT=default is the default socket", "", map[string]string{"DOCKER_CONTEXT": "default", "DOCKER_CONFIG": store}, func(string) bool { return true }, DefaultHost, "default socket, DOCKER_CONTEXT=default", ""},
		{"a missing context is an error", "", map[string]string{"DOCKER_CONTEXT": "gone", "DOCKER_CONFIG": store}, nil, "", "", `context "gone" does not exist`},
		{"no config: default socket", "", map[string]string{"DOCKER_CONFIG": t.TempDir()}, func(string) bool { return true }, DefaultHost, "default socket", ""},
		{"rootless Docker when the default socket is missing", "", map[string]string{"DOCKER_CONFIG": t.TempDir(), "XDG_RUNTIME_DIR": "/run/user/1000"},
			func(p string) bool {
				return p == "/run/user/1000/docker.sock" || p == "/run/user/1000/podman/podman.sock"
			}, "unix:///run/user/1000/docker.sock", "rootless Docker", ""},
		{"rootless Podman next", "", map[string]string{"DOCKER_CONFIG": t.TempDir(), "XDG_RUNTIME_DIR": "/run/user/1000"},
			func(p string) bool { return p == "/run/user/1000/podman/podman.sock" || p == "/run/podman/podman.sock" }, "unix:///run/user/1000/podman/podman.sock", "rootless Podman", ""},
		{"rootful Podman last", "", map[string]string{"DOCKER_CONFIG": t.TempDir()}, func(p string) bool { return p == "/run/podman/podman.sock" }, "unix:///run/podman/podman.sock", "Podman socket", ""},
		{"nothing found: the default, saying so", "", map[string]string{"DOCKER_CONFIG": t.TempDir()}, noSockets, DefaultHost, "no engine socket found", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := Discover(Lookup{Flag: tt.flag, Getenv: func(k string) string { return tt.env[k] }, Home: "/home/u", IsSocket: tt.isSocket})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %+v %v, want error %q", ep, err, tt.wantErr)
				}
				return
			}
			if err != nil || ep.Host != tt.wantHost || !strings.Contains(ep.Source, tt.wantSource) {
				t.Errorf("got %+v %v, want %s from %q", ep, err, tt.wantHost, tt.wantSource)
			}
		})
	}
}

func TestDiscoverUnreadableConfigIsIgnored(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "config.json"), "{not json")
	ep, err := Discover(Lookup{Getenv: func(k string) string { return map[string]string{"DOCKER_CONFIG": dir}[k] }, IsSocket: func(string) bool { return true }})
	if err != nil || ep.Host != DefaultHost || !strings.Contains(ep.Source, "ignoring") {
		t.Errorf("got %+v %v, want the default socket and a note on the ignored config", ep, err)
	}
}

func TestDiscoverTLS(t *testing.T) {
	certs := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		writeTestFile(t, filepath.Join(certs, f), "x")
	}
	tests := []struct {
		name string
		env  map[string]string
		want *TLSFiles
	}{
		{"plain", map[string]string{"DOCKER_HOST": "tcp://h:2375", "DOCKER_CERT_PATH": certs}, nil},
		{"verify", map[string]string{"DOCKER_HOST": "tcp://h:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": certs},
			&TLSFiles{CA: filepath.Join(certs, "ca.pem"), Cert: filepath.Join(certs, "cert.pem"), Key: filepath.Join(certs, "key.pem"), Verify: true}},
		{"tls without verification", map[string]string{"DOCKER_HOST": "tcp://h:2376", "DOCKER_TLS": "1", "DOCKER_CERT_PATH": certs},
			&TLSFiles{CA: filepath.Join(certs, "ca.pem"), Cert: filepath.Join(certs, "cert.pem"), Key: filepath.Join(certs, "key.pem")}},
		{"cert path defaults to the config dir", map[string]string{"DOCKER_HOST": "tcp://h:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CONFIG": certs},
			&TLSFiles{CA: filepath.Join(certs, "ca.pem"), Cert: filepath.Join(certs, "cert.pem"), Key: filepath.Join(certs, "key.pem"), Verify: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := Discover(Lookup{Getenv: func(k string) string { return tt.env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			if (ep.TLS == nil) != (tt.want == nil) || (ep.TLS != nil && *ep.TLS != *tt.want) {
				t.Errorf("got TLS %+v, want %+v", ep.TLS, tt.want)
			}
		})
	}
	// A context's TLS material sits beside its metadata; SkipTLSVerify turns verification off.
	store := contextStore(t, "remote", map[string]string{"remote": "tcp://r:2376"})
	tlsDir := filepath.Join(store, "contexts", "tls", contextID("remote"), "docker")
	writeTestFile(t, filepath.Join(tlsDir, "ca.pem"), "x")
	ep, err := Discover(Lookup{Getenv: func(k string) string { return map[string]string{"DOCKER_CONFIG": store}[k] }})
	if err != nil || ep.TLS == nil || ep.TLS.CA != filepath.Join(tlsDir, "ca.pem") || ep.TLS.Cert != "" || !ep.TLS.Verify {
		t.Errorf("got %+v %v, want the context's CA with verification", ep.TLS, err)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "bad.pem"), "not a certificate")
	for name, f := range map[string]TLSFiles{
		"bad CA":           {CA: filepath.Join(dir, "bad.pem"), Verify: true},
		"missing CA":       {CA: filepath.Join(dir, "nope.pem")},
		"cert without key": {Cert: filepath.Join(dir, "bad.pem")},
	} {
		if _, err := f.config(); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
	cfg, err := (&TLSFiles{}).config()
	if err != nil || !cfg.InsecureSkipVerify {
		t.Errorf("no files, no verify: got %+v %v, want a config that skips verification", cfg, err)
	}
}

func TestSSHDialerArgs(t *testing.T) {
	// A fake ssh on PATH records its arguments and exits: the dialer runs it as the docker
	// CLI's ssh helper does.
	dir := t.TempDir()
	rec := filepath.Join(dir, "args")
	writeTestFile(t, filepath.Join(dir, "ssh"), "#!/bin/sh\nprintf '%s\\n' \"$@\" > "+rec+"\n")
	if err := os.Chmod(filepath.Join(dir, "ssh"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	u, _ := url.Parse("ssh://deploy@build.example:2222/run/user/1000/docker.sock")
	dial, err := sshDialer(u)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := dial(t.Context(), "tcp", "")
	if err != nil {
		t.Skipf("!!! SKIPPED: cannot run a shell script as ssh here: %v", err)
	}
	_, _ = conn.Read(make([]byte, 1)) // EOF once the fake exits
	conn.Close()
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(b))
	want := []string{"-o", "ConnectTimeout=30", "-T", "-l", "deploy", "-p", "2222", "--", "build.example", "docker", "--host", "unix:///run/user/1000/docker.sock", "system", "dial-stdio"}
	if !slices.Equal(got, want) {
		t.Errorf("got ssh %q, want %q", got, want)
	}
	if _, err := sshDialer(&url.URL{Scheme: "ssh", Host: "h", User: url.UserPassword("u", "p")}); err == nil {
		t.Error("a password in the URL: got no error")
	}
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
