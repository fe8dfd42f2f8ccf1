package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configfile "github.com/cline-mcp/cline-mcp/config"
)

// TestHelpGroupsEveryFlag: --help prints the flags a client's server entry sets, each under
// exactly one topic, at most 20 of them, and no test hook; every other flag is a key of the
// configuration file (and still a flag).
func TestHelpGroupsEveryFlag(t *testing.T) {
	fs := newFlags(io.Discard)
	(&config{}).register(fs)
	group := map[string]string{}
	for _, g := range flagGroups {
		for _, name := range g.names {
			if prev, dup := group[name]; dup {
				t.Errorf("flag -%s is in groups %q and %q", name, prev, g.title)
			}
			group[name] = g.title
			if fs.Lookup(name) == nil {
				t.Errorf("group %q names -%s, which is not a flag", g.title, name)
			}
		}
	}
	for _, name := range configfile.HelpFlags() {
		if _, ok := group[name]; !ok {
			t.Errorf("flag -%s is a client entry's flag but in no group of flagGroups (help.go)", name)
		}
	}
	if len(group) > 20 || len(group) != len(configfile.HelpFlags()) {
		t.Errorf("--help shows %d flags; configfile.HelpFlags has %d (at most 20)", len(group), len(configfile.HelpFlags()))
	}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if _, ok := configfile.KeyOf(f.Name); !ok && f.Name != configfile.FileFlag {
			t.Errorf("flag -%s has no key in the configuration file (config/keys.go)", f.Name)
		}
	})
	if n < 20 {
		t.Fatalf("only %d flags registered; the test would prove little", n)
	}
	var out bytes.Buffer
	if code := realMain([]string{"--help"}, strings.NewReader(""), &out, io.Discard); code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	help := out.String()
	fs.VisitAll(func(f *flag.Flag) {
		want := 0
		if _, shown := group[f.Name]; shown {
			want = 1
		}
		if strings.Count(help, "\n  -"+f.Name+" ") != want {
			t.Errorf("--help lists -%s not %d times:\n%s", f.Name, want, help)
		}
	})
	for _, hidden := range []string{"Other:", "retry-backoff", "progress-heartbeat", "CLINE_MCP_TEST_"} {
		if strings.Contains(help, hidden) {
			t.Errorf("--help shows %q:\n%s", hidden, help)
		}
	}
	if i, j := strings.Index(help, "\nCline:\n"), strings.Index(help, "\nLogging and configuration:\n"); i < 0 || j < i {
		t.Errorf("--help is not grouped by topic:\n%s", help)
	}
}

// TestFlagsDocumented: every flag appears as --name in the README or a page of docs/.
func TestFlagsDocumented(t *testing.T) {
	var docs strings.Builder
	pages, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	for _, p := range append(pages, filepath.Join("..", "..", "README.md")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	if len(pages) < 5 {
		t.Fatalf("found %d pages in docs/; the test would prove little", len(pages))
	}
	fs := newFlags(io.Discard)
	(&config{}).register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		name := "--" + f.Name
		// a whole flag name: not a prefix of a longer one (--docker-egress of --docker-egress-image)
		found := false
		for rest := docs.String(); !found; {
			i := strings.Index(rest, name)
			if i < 0 {
				break
			}
			rest = rest[i+len(name):]
			found = rest == "" || !strings.ContainsAny(rest[:1], "abcdefghijklmnopqrstuvwxyz-")
		}
		if !found {
			t.Errorf("flag %s is documented neither in README.md nor in docs/*.md", name)
		}
	})
}

// TestTestHooks: the retry backoff and the progress heartbeat are no flags but the tests'
// environment hooks, checked like flags.
func TestTestHooks(t *testing.T) {
	for _, f := range []string{"--retry-backoff", "--progress-heartbeat"} {
		var errOut bytes.Buffer
		if code := realMain([]string{f, "1s"}, strings.NewReader(""), io.Discard, &errOut); code != 2 {
			t.Errorf("%s 1s: exit %d, want 2 (no such flag); stderr %q", f, code, errOut.String())
		}
	}
	for _, c := range []struct{ name, value string }{
		{envTestRetryBackoff, "soon"}, {envTestRetryBackoff, "-1s"},
		{envTestHeartbeat, "10ms"}, {envTestHeartbeat, "2m"}, {envTestHeartbeat, "x"},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			var out, errOut bytes.Buffer
			if code := realMain([]string{"--cline", "/nonexistent/cline"}, strings.NewReader(""), &out, &errOut); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(errOut.String(), c.name) || out.Len() > 0 {
				t.Errorf("stderr %q does not name %s (stdout %q)", errOut.String(), c.name, out.String())
			}
		})
	}
	env := map[string]string{envTestRetryBackoff: "200ms", envTestHeartbeat: "1s"}
	var c config
	if err := c.testEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.backoff != 200*time.Millisecond || c.heartbeat != time.Second {
		t.Errorf("got backoff %v, heartbeat %v; want 200ms, 1s", c.backoff, c.heartbeat)
	}
	if err := c.testEnv(func(string) string { return "" }); err != nil || c.heartbeat != defaultHeartbeat {
		t.Errorf("unset: heartbeat %v, err %v; want %v", c.heartbeat, err, defaultHeartbeat)
	}
}
