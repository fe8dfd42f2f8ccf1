package main

import (
	"os"
	"strings"
	"testing"
)

// TestSetupCarriesOnlyClientEntryFlags: a client entry takes the flags of --help; a machine
// setting (container limits, pools, jobs) is refused with the configuration file's key to use
// instead, and nothing is written.
func TestSetupCarriesOnlyClientEntryFlags(t *testing.T) {
	home := setupHome(t)
	code, out, errOut := runSetupCmd(t, "cursor", "--print", "--isolation", "docker", "--max-concurrent", "2", "--docker-env", "OPENAI_API_KEY")
	if code != 0 || !strings.Contains(out, "--isolation=docker") || !strings.Contains(out, "--max-concurrent=2") {
		t.Fatalf("client-entry flags: exit %d:\n%s%s", code, out, errOut)
	}
	for flag, key := range map[string]string{"--docker-memory=4g": "[docker] memory", "--job-keep=72h": "[jobs] keep", "--workspace-pool=2": "[workspace] pool"} {
		code, _, errOut := runSetupCmd(t, "cursor", flag)
		if code != 2 || !strings.Contains(errOut, key) || !strings.Contains(errOut, "configuration file") {
			t.Errorf("setup cursor %s: exit %d, stderr %q; want 2 naming %q", flag, code, errOut, key)
		}
	}
	if code, _, errOut := runSetupCmd(t, "cursor", "--print", "--isolation", "kubernetes", "--docker-image", "my/cline:1"); code != 2 || !strings.Contains(errOut, "--docker-image") {
		t.Errorf("a Docker flag with --isolation kubernetes: exit %d, stderr %q; want 2 naming the flag (serve refuses it)", code, errOut)
	}
	entries, _ := os.ReadDir(home)
	for _, e := range entries {
		if e.Name() != ".config" && e.Name() != "AppData" {
			t.Errorf("a refused setup wrote %s", e.Name())
		}
	}
}
