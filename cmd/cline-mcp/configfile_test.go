package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFileThroughTheBinary: `cline-mcp config` shows the file's values, a flag overriding
// one, and the defaults, each with where it came from; a bad file stops every command at start
// with a message naming the key, and `none` reads no file.
func TestConfigFileThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.toml")
	text := "[docker]\nmemory = \"4g\"\npids = 512\nenv = [\"OPENAI_API_KEY\"]\n[egress]\nallow = [\"api.example.com:443\"]\n[jobs]\nkeep = \"72h\"\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CLINE_MCP_CONFIG", "")
	var out, errOut bytes.Buffer
	code := realMain([]string{"config", "--config-file", file, "--docker-pids", "64", "--isolation", "docker"}, strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("config exited %d: %s", code, errOut.String())
	}
	for _, want := range []string{
		"# configuration file: " + file,
		`memory = "4g"`, "# file " + file + ", --docker-memory",
		"pids = 64", "# flag, --docker-pids",
		`floor = "docker"`, "# flag, --isolation",
		`env = ["OPENAI_API_KEY"]`, `allow = ["api.example.com:443"]`, "--egress-allow",
		`keep = "72h0m0s"`, `level = "info"`, "# default, --log-level",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("config output lacks %q:\n%s", want, out.String())
		}
	}

	// The environment names the file when the flag does not; "none" reads none.
	t.Setenv("CLINE_MCP_CONFIG", file)
	out.Reset()
	if code := realMain([]string{"config"}, strings.NewReader(""), &out, io.Discard); code != 0 || !strings.Contains(out.String(), `memory = "4g"`) {
		t.Errorf("CLINE_MCP_CONFIG: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := realMain([]string{"config", "--config-file", "none"}, strings.NewReader(""), &out, io.Discard); code != 0 || !strings.Contains(out.String(), `memory = "2g"`) {
		t.Errorf("--config-file none: exit %d\n%s", code, out.String())
	}

	for bad, want := range map[string]string{
		"[docker]\nmemroy = \"4g\"\n":               "unknown key docker.memroy",
		"[docker]\nmemory = \"lots\"\n":             "--docker-memory",
		"[jobs]\nmax = \"forever\"\n":               "jobs.max",
		"[workspace]\npool = 99\n":                  "--workspace-pool must be between 0 and 16",
		"[egress]\nallow = [\"not an endpoint\"]\n": "--egress-allow",
	} {
		if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"serve", "config", "doctor"} {
			errOut.Reset()
			if code := realMain([]string{cmd, "--config-file", file}, strings.NewReader(""), io.Discard, &errOut); code != 2 || !strings.Contains(errOut.String(), want) {
				t.Errorf("%s with %q: exit %d, stderr %q; want 2 naming %q", cmd, bad, code, errOut.String(), want)
			}
		}
	}
	errOut.Reset()
	if code := realMain([]string{"config", "--config-file", filepath.Join(dir, "absent.toml")}, strings.NewReader(""), io.Discard, &errOut); code != 2 {
		t.Errorf("a named file that is missing: exit %d, want 2 (%s)", code, errOut.String())
	}
}
