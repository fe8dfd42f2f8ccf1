package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineFlagsRefused: a flag that does nothing for the server's container engine stops the
// server at start, naming the flag and the one to use; the flags of the engine in use pass, and
// a server of pods keeps no Docker egress mode (no Docker proxy warning in its results).
func TestEngineFlagsRefused(t *testing.T) {
	t.Setenv("CLINE_MCP_CONFIG", "none")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--isolation", "kubernetes", "--egress-allow", "api.example.com:443"}, []string{"--egress-allow does nothing", "Kubernetes pods", "use --k8s-egress-allow"}},
		{[]string{"--isolation=kubernetes", "--docker-network=bridge"}, []string{"--docker-network does nothing", "use --k8s-egress"}},
		{[]string{"--isolation", "kubernetes", "-docker-egress", "open"}, []string{"--docker-egress does nothing", "use --k8s-egress"}},
		{[]string{"--retry-isolation", "kubernetes", "--docker-memory", "1g"}, []string{"--docker-memory does nothing", "use --k8s-memory"}},
		{[]string{"--isolation", "kubernetes", "--docker-pids", "100"}, []string{"--docker-pids does nothing"}},
		{[]string{"--isolation", "docker", "--k8s-egress-allow", "10.0.0.1:443"}, []string{"--k8s-egress-allow does nothing", "Docker containers", "--isolation kubernetes", "use --egress-allow"}},
		{[]string{"--k8s-namespace", "agents"}, []string{"--k8s-namespace does nothing"}},
	} {
		var out, errOut bytes.Buffer
		code := realMain(c.args, strings.NewReader(""), &out, &errOut)
		if code != 2 || out.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing", c.args, code, out.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("%q: stderr %q lacks %q", c.args, errOut.String(), w)
			}
		}
	}
	for _, args := range [][]string{
		{"--isolation", "kubernetes", "--k8s-namespace", "agents", "--k8s-egress-allow", "10.0.0.1:443", "--docker-env", "OPENAI_API_KEY", "--docker-cline", "/usr/local/bin/cline"},
		{"--isolation", "docker", "--docker-network", "bridge", "--egress-allow", "api.example.com:443"},
	} {
		cfg := &config{}
		fs := newFlags(io.Discard)
		cfg.register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg.args = args
		if err := cfg.validate(); err != nil {
			t.Errorf("%q: %v", args, err)
		}
		if kube := args[1] == "kubernetes"; kube != (cfg.dockerEgress == "") {
			t.Errorf("%q: docker egress mode %q", args, cfg.dockerEgress)
		}
	}
}

// TestEngineFlagsFromTheFile: the configuration file may hold both engines' settings: its
// [docker] keys do not stop a server of pods, while the same flag on the command line does.
func TestEngineFlagsFromTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(file, []byte("[docker]\nmemory = \"1g\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CLINE_MCP_CONFIG", file)
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--isolation", "kubernetes"}, true},
		{[]string{"--isolation", "kubernetes", "--docker-memory", "2g"}, false},
	} {
		cfg := &config{}
		fs := newFlags(io.Discard)
		cfg.register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if _, _, err := applyConfigFile(fs, cfg); err != nil {
			t.Fatal(err)
		}
		if err := cfg.validate(); (err == nil) != c.ok {
			t.Errorf("%q with the file's [docker] memory: %v, want ok %v", c.args, err, c.ok)
		}
	}
}
