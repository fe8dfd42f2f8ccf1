package gitfixture

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Trap is a host marker file and a script that creates it, then behaves like cat: the program a
// hostile repository names in every place its config can name one. Escape tests first prove the
// trap is live — plain git springs it — and then that the code under test does not.
type Trap struct{ Marker, Script string }

// NewTrap writes the script into a temp dir of t.
func NewTrap(t *testing.T) Trap {
	t.Helper()
	dir := t.TempDir()
	tr := Trap{Marker: filepath.Join(dir, "pwned"), Script: filepath.Join(dir, "hostile.sh")}
	body := "#!/bin/sh\necho \"$0 $*\" >> " + tr.Marker + "\nif [ $# -gt 0 ] && [ -f \"$1\" ]; then cat \"$1\"; else cat; fi\n"
	if err := os.WriteFile(tr.Script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return tr
}

// Sprung reports whether the script ran.
func (tr Trap) Sprung() bool { _, err := os.Stat(tr.Marker); return err == nil }

// Read is what the script wrote into the marker: how it was called, once per run.
func (tr Trap) Read() string {
	b, _ := os.ReadFile(tr.Marker)
	return string(b)
}

// Reset fails the test when the trap did not spring (the attack is not live), then re-arms it.
func (tr Trap) Reset(t *testing.T) {
	t.Helper()
	if !tr.Sprung() {
		t.Fatal("the trap did not spring for plain git: the attack is not live, the test proves nothing")
	}
	os.Remove(tr.Marker)
}

// Config is git config that runs the trap from every place a repository's config can name a
// program.
func (tr Trap) Config() string {
	return "[core]\n\tfsmonitor = " + tr.Script + "\n\tpager = " + tr.Script + "\n\thooksPath = " + filepath.Dir(tr.Script) + "\n" +
		"[filter \"evil\"]\n\tclean = " + tr.Script + "\n\tsmudge = " + tr.Script + "\n\trequired = true\n" +
		"[diff \"evil\"]\n\ttextconv = " + tr.Script + "\n\tcommand = " + tr.Script + "\n" +
		"[diff]\n\texternal = " + tr.Script + "\n"
}

// Plant makes dir a hostile git dir.
func (tr Trap) Plant(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"objects", "refs/heads", "info"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	WriteFile(t, filepath.Join(dir, "HEAD"), "ref: refs/heads/main\n")
	WriteFile(t, filepath.Join(dir, "config"), "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"+tr.Config())
	WriteFile(t, filepath.Join(dir, "info", "attributes"), "* filter=evil diff=evil\n")
}

// Naive runs git the way the evidence path did before the trust boundary: discovered from dir.
func Naive(dir string, args ...string) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	index := filepath.Join(os.TempDir(), "cline-mcp-naive-"+hex.EncodeToString(b))
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+index)
	_ = cmd.Run()
	os.Remove(strings.TrimPrefix(cmd.Env[len(cmd.Env)-1], "GIT_INDEX_FILE="))
}
