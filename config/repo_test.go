package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestRepoPolicyOnlyTightens: a repository's file may raise the isolation floor, narrow egress
// and lower limits; every other key, and every value that would loosen, is refused.
func TestRepoPolicyOnlyTightens(t *testing.T) {
	p, err := ParsePolicy([]byte("[isolation]\nfloor = \"docker\"\n[egress]\nmode = \"none\"\nallow = [\"a.example:443\"]\n[limits]\nmax-cost-usd = 0.25\nmax-iterations = 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Floor != "docker" || p.Egress != "none" || !p.AllowSet || p.MaxCostUSD != 0.25 || p.MaxIterations != 5 {
		t.Fatalf("policy %+v", p)
	}
	for text, want := range map[string]string{
		"[egress]\nmode = \"open\"\n":            "never open",
		"[docker]\nimage = \"evil/cline\"\n":     "docker.image is a setting of the server's own file",
		"[limits]\nmax-concurrent = 100\n":       "limits.max-concurrent",
		"[limits]\nmax-cost-usd = -1\n":          "positive",
		"[limits]\nmax-iterations = 0\n":         "positive",
		"[isolation]\nretry = \"docker\"\n":      "isolation.retry",
		"[isolation]\nfloor = \"sideways\"\n":    "want host, docker or kubernetes",
		"[cline]\npath = \"/tmp/evil-cline\"\n":  "cline.path",
		"[docker]\nenv = [\"AWS_SECRET_KEY\"]\n": "docker.env",
	} {
		if _, err := ParsePolicy([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %q", text, err, want)
		}
	}
	if p, err := ParsePolicy([]byte("[isolation]\nfloor = \"host\"\n")); err != nil || p.Floor != "" {
		t.Errorf("floor host asks nothing: %+v %v", p, err)
	}
}

// TestRepoPolicyCombines: the stricter floor, the lower ceiling, and only allowed endpoints the
// server allows too.
func TestRepoPolicyCombines(t *testing.T) {
	if FloorOf("host", "docker") != "docker" || FloorOf("kubernetes", "docker") != "kubernetes" || FloorOf("docker", "") != "docker" {
		t.Error("FloorOf does not keep the stricter isolation")
	}
	if Ceiling(0.0, 0.5) != 0.5 || Ceiling(1.0, 0.5) != 0.5 || Ceiling(0.25, 0.5) != 0.25 || Ceiling(3, 0) != 3 {
		t.Error("Ceiling does not keep the lower limit")
	}
	p := Policy{Allow: []string{"a.example:443", "b.example:443"}, AllowSet: true}
	kept, refused := p.AllowWithin([]string{"a.example:443", "c.example:443"})
	if strings.Join(kept, ",") != "a.example:443" || strings.Join(refused, ",") != "b.example:443" {
		t.Errorf("kept %q refused %q", kept, refused)
	}
	if kept, _ := (Policy{}).AllowWithin([]string{"c.example:443"}); len(kept) != 1 {
		t.Error("a policy without allow narrowed the server's list")
	}
}

// TestReadRepoPolicyRefusesPlantedFiles: a link (to a file outside or inside), a FIFO or a
// directory named .cline-mcp.toml is refused without blocking; the real file is read.
func TestReadRepoPolicyRefusesPlantedFiles(t *testing.T) {
	read := func(dir string) (Policy, error) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		done := make(chan struct{})
		var p Policy
		go func() { p, err = ReadRepoPolicy(root); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("ReadRepoPolicy blocked")
		}
		return p, err
	}
	dir := t.TempDir()
	if p, err := read(dir); err != nil || p.Floor != "" {
		t.Errorf("no file: %+v %v", p, err)
	}
	file := filepath.Join(dir, RepoFileName)
	if err := os.WriteFile(file, []byte("[isolation]\nfloor = \"docker\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := read(dir); err != nil || p.Floor != "docker" {
		t.Fatalf("the file: %+v %v", p, err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	outside := filepath.Join(t.TempDir(), "policy.toml")
	os.WriteFile(outside, []byte("[isolation]\nfloor = \"docker\"\n"), 0o644)
	for name, plant := range map[string]func() error{
		"link outside": func() error { return os.Symlink(outside, file) },
		"link inside": func() error {
			os.WriteFile(filepath.Join(dir, "p.toml"), []byte("[isolation]\nfloor = \"docker\"\n"), 0o644)
			return os.Symlink("p.toml", file)
		},
		"fifo":      func() error { return mkfifo(file) },
		"directory": func() error { return os.Mkdir(file, 0o755) },
	} {
		os.RemoveAll(file)
		if err := plant(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := os.Lstat(file); err != nil {
			t.Fatalf("%s was not planted: %v", name, err) // the attack must exist for the test to mean anything
		}
		if p, err := read(dir); err == nil || p.Floor != "" {
			t.Errorf("%s: read %+v, %v; want refused", name, p, err)
		}
	}
}
