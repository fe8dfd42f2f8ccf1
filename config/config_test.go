package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// testFlags registers a few flags of each kind, as cmd/cline-mcp does.
func testFlags() (*flag.FlagSet, map[string]any) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	v := map[string]any{
		"isolation":        fs.String("isolation", "host", ""),
		"docker-memory":    fs.String("docker-memory", "2g", ""),
		"docker-pids":      fs.Int64("docker-pids", 256, ""),
		"max-cost-usd":     fs.Float64("max-cost-usd", 0, ""),
		"job-max":          fs.Duration("job-max", time.Hour, ""),
		"docker-egress":    fs.String("docker-egress", "", ""),
		"k8s-egress":       fs.String("k8s-egress", "policy", ""),
		"k8s-egress-dns":   fs.String("k8s-egress-dns", "kube-dns", ""),
		"log-level":        fs.String("log-level", "info", ""),
		"egress-allow":     new(multi),
		"k8s-egress-allow": new(multi),
		"docker-env":       new(multi),
	}
	fs.Var(v["egress-allow"].(*multi), "egress-allow", "")
	fs.Var(v["k8s-egress-allow"].(*multi), "k8s-egress-allow", "")
	fs.Var(v["docker-env"].(*multi), "docker-env", "")
	return fs, v
}

const sample = `
[isolation]
floor = "docker"

[docker]
memory = "4g"
pids = 512
env = ["OPENAI_API_KEY", "HTTPS_PROXY"]

[limits]
max-cost-usd = 0.5

[jobs]
max = "2h"

[egress]
mode = "provider"
allow = ["api.example.com:443", "*.lab.example:8443"]
`

func containerOf(fs *flag.FlagSet) func() string {
	return func() string {
		if fs.Lookup("isolation").Value.String() == "kubernetes" {
			return "kubernetes"
		}
		return "docker"
	}
}

// TestFileSetsFlagsUnlessGiven: every key of the file sets its flag as the flag would (same
// parser), a flag on the command line wins over the file, and each value says where it came from.
func TestFileSetsFlagsUnlessGiven(t *testing.T) {
	f, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	f.Path = "/home/u/.config/cline-mcp/config.toml"
	fs, v := testFlags()
	if err := fs.Parse([]string{"--docker-memory", "1g", "--log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	origins, err := Apply(fs, f, containerOf(fs))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{
		"isolation":     *v["isolation"].(*string),
		"docker-memory": *v["docker-memory"].(*string),
		"docker-egress": *v["docker-egress"].(*string),
		"log-level":     *v["log-level"].(*string),
	}
	want := map[string]string{"isolation": "docker", "docker-memory": "1g", "docker-egress": "provider", "log-level": "debug"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
	if n := *v["docker-pids"].(*int64); n != 512 {
		t.Errorf("docker-pids %d, want 512", n)
	}
	if c := *v["max-cost-usd"].(*float64); c != 0.5 {
		t.Errorf("max-cost-usd %v", c)
	}
	if d := *v["job-max"].(*time.Duration); d != 2*time.Hour {
		t.Errorf("job-max %v", d)
	}
	if a := v["egress-allow"].(*multi); len(*a) != 2 || (*a)[1] != "*.lab.example:8443" {
		t.Errorf("egress-allow %q", *a)
	}
	if e := v["docker-env"].(*multi); len(*e) != 2 {
		t.Errorf("docker-env %q", *e)
	}
	if len(*v["k8s-egress-allow"].(*multi)) != 0 {
		t.Error("a Docker server's [egress] allow reached the Kubernetes flag")
	}
	for name, kind := range map[string]string{"docker-memory": "flag", "log-level": "flag", "docker-pids": "file", "egress-allow": "file"} {
		if origins[name].Kind != kind {
			t.Errorf("%s comes from %v, want %s", name, origins[name], kind)
		}
	}
	if _, ok := origins["job-max"]; !ok || origins["job-max"].Where != f.Path {
		t.Errorf("job-max origin %v", origins["job-max"])
	}
	var out bytes.Buffer
	Print(&out, fs, origins, "docker")
	for _, line := range []string{`memory = "1g"`, "# flag, --docker-memory", `pids = 512`, "# file " + f.Path + ", --docker-pids",
		`level = "debug"`, "[egress]", `mode = "provider"`, "[jobs]", `max = "2h0m0s"`,
		`allow = ["api.example.com:443", "*.lab.example:8443"]`, `max-cost-usd = 0.5`} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("config output lacks %q:\n%s", line, out.String())
		}
	}
}

// TestEgressOneShapeForBothExecutors: the same [egress] keys set the Kubernetes flags when the
// file (or a flag) makes Kubernetes the container executor.
func TestEgressOneShapeForBothExecutors(t *testing.T) {
	f, err := Parse([]byte("[isolation]\nfloor = \"kubernetes\"\n[egress]\nmode = \"none\"\nallow = [\"10.0.0.0/24:443\"]\ndns = \"none\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs, v := testFlags()
	if _, err := Apply(fs, f, containerOf(fs)); err != nil {
		t.Fatal(err)
	}
	if m := *v["k8s-egress"].(*string); m != "policy" {
		t.Errorf("k8s-egress %q, want policy", m)
	}
	if a := *v["k8s-egress-allow"].(*multi); len(a) != 1 || a[0] != "10.0.0.0/24:443" {
		t.Errorf("k8s-egress-allow %q", a)
	}
	if d := *v["k8s-egress-dns"].(*string); d != "none" {
		t.Errorf("k8s-egress-dns %q", d)
	}
	if len(*v["egress-allow"].(*multi)) != 0 || *v["docker-egress"].(*string) != "" {
		t.Error("a Kubernetes server's [egress] reached the Docker flags")
	}
	fd, _ := Parse([]byte("[egress]\ndns = \"none\"\n"))
	fs, _ = testFlags()
	if _, err := Apply(fs, fd, containerOf(fs)); err == nil || !strings.Contains(err.Error(), "Kubernetes runs only") {
		t.Errorf("egress.dns on a Docker server: %v", err)
	}
}

// TestFileRefusals: unknown keys, wrong kinds, and values the flag's parser refuses are errors
// naming the key; nothing is half-applied silently.
func TestFileRefusals(t *testing.T) {
	for text, want := range map[string]string{
		"[docker]\nmemroy = \"2g\"\n":           "unknown key docker.memroy",
		"isolation = \"docker\"\n":              "unknown key isolation",
		"[docker]\nenv = \"OPENAI_API_KEY\"\n":  "docker.env: takes an array",
		"[docker]\nmemory = [\"1g\"]\n":         "docker.memory: takes one value",
		"[limits]\nmax-cost-usd = inf\n":        "not a finite number",
		"[docker]\nmemory = { a = 1 }\n":        "not a value this key takes",
		"[docker\n":                             "",
		"[limits]\nmax-cost-usd = \"cheap\"\n":  "max-cost-usd",
		"[egress]\nmode = \"sideways\"\n":       "",
		"[isolation]\nfloor = \"kubernetes\"\n": "",
	} {
		f, err := Parse([]byte(text))
		if err == nil {
			fs, _ := testFlags()
			f.Path = "c.toml"
			_, err = Apply(fs, f, containerOf(fs))
			if strings.Contains(text, "sideways") && err == nil {
				fs2, _ := testFlags()
				fs2.Set("isolation", "kubernetes")
				_, err = Apply(fs2, f, containerOf(fs2))
			}
		}
		switch {
		case strings.Contains(text, "floor"):
			if err != nil {
				t.Errorf("%q: %v", text, err)
			}
		case err == nil:
			t.Errorf("%q accepted", text)
		case !strings.Contains(err.Error(), want):
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// TestLoadNeverBlocks: a FIFO, a directory or an oversized file named as the configuration is
// refused at once, and a missing one is ErrNoFile.
func TestLoadNeverBlocks(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "absent.toml")); !errors.Is(err, ErrNoFile) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big file: %v", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	fifo := filepath.Join(dir, "fifo.toml")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was not made: %v", err) // the attack must exist for the test to mean anything
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
}

// TestLocate: the flag, then the environment, then the user's default; "none" reads nothing.
func TestLocate(t *testing.T) {
	if p, explicit := Locate("/a.toml", "/b.toml"); p != "/a.toml" || !explicit {
		t.Errorf("flag: %q %v", p, explicit)
	}
	if p, explicit := Locate("", "/b.toml"); p != "/b.toml" || !explicit {
		t.Errorf("env: %q %v", p, explicit)
	}
	if p, explicit := Locate("none", "/b.toml"); p != "" || explicit {
		t.Errorf("none: %q %v", p, explicit)
	}
	if p, explicit := Locate("", ""); explicit || (p != "" && !strings.HasSuffix(p, filepath.Join("cline-mcp", "config.toml"))) {
		t.Errorf("default: %q %v", p, explicit)
	}
}

// TestKeysAreUnique: no key or flag appears twice, and --help shows at most 20 flags.
func TestKeysAreUnique(t *testing.T) {
	names, flags := map[string]bool{}, map[string]bool{}
	for _, k := range Keys {
		if names[k.Name] || (k.Flag != "" && flags[k.Flag]) {
			t.Errorf("key %s / flag %s twice", k.Name, k.Flag)
		}
		names[k.Name], flags[k.Flag] = true, true
		if s, n, ok := strings.Cut(k.Name, "."); !ok || s == "" || n == "" || strings.Contains(n, ".") {
			t.Errorf("key %q is not section.name", k.Name)
		}
	}
	if n := len(HelpFlags()); n > 20 || n < 10 {
		t.Errorf("--help would show %d flags", n)
	}
	for _, f := range EgressFlags() {
		if _, ok := KeyOf(f); !ok {
			t.Errorf("egress flag %s has no key", f)
		}
	}
}
