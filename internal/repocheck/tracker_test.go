package repocheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// trackerRef finds a citation of an issue tracker that the repository does not hold (the word
// issue or issues, then a number, maybe after "#"): a comment or a document must say what a check
// does, not which ticket asked for it.
var trackerRef = regexp.MustCompile(`(?i)\bissues? ?#?[0-9]+\b`)

// trackerRefs lists "path:line: text" for every tracker citation in the tracked and untracked,
// not ignored, text files under dir (go.sum and binary files aside).
func trackerRefs(dir string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var found []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" || filepath.Base(f) == "go.sum" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			continue // deleted in the work tree, or binary
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
		for n := 1; sc.Scan(); n++ {
			if trackerRef.Match(sc.Bytes()) {
				found = append(found, fmt.Sprintf("%s:%d: %s", f, n, strings.TrimSpace(sc.Text())))
			}
		}
	}
	return found, nil
}

// TestNoTrackerReferences: no file cites an issue number of a tracker outside the repository.
func TestNoTrackerReferences(t *testing.T) {
	found, err := trackerRefs(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("cites an outside tracker (say what the code does instead): %s", f)
	}
}

// TestTrackerGuardRefuses: the guard finds a citation in a repository that has one (and only it).
func TestTrackerGuardRefuses(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cite, cites := "iss"+"ue 28", "iss"+"ues #7" // not spelled out: this file is checked too
	write("a.go", "package a\n\n// Fixed for "+cite+", hole 3.\n")
	write("b.md", "An issue with the proxy: it refused.\nSee "+cites+".\n")
	write("c.go", "package c\n\n// Reissue 4 tokens.\n")
	found, err := trackerRefs(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.go:3: // Fixed for " + cite + ", hole 3.", "b.md:2: See " + cites + "."}
	if strings.Join(found, "\n") != strings.Join(want, "\n") {
		t.Fatalf("found %q, want %q", found, want)
	}
}
