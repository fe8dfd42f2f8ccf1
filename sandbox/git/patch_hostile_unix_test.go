//go:build unix

package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyPatchRefusesHostile feeds ApplyPatch patches a run could have written to reach
// outside the checkout or into git's own files. Each case names the check that must refuse it
// (its message), so a patch refused for another reason (a parse error, git's own refusal) fails
// the test: the attack reached the check. Where plain `git apply --index` would carry the attack
// out, the test first shows it does (the marker: the planted file or link exists in a scratch
// clone), then that ApplyPatch leaves the checkout and the outside untouched.
func TestApplyPatchRefusesHostile(t *testing.T) {
	const blob = "1111111111111111111111111111111111111111"
	cases := []struct {
		name, body, reason string
		planted            string // relative to the checkout; must not exist afterwards
		naiveHarm          bool   // plain git apply plants it
	}{
		{name: "dotdot", reason: "empty, . or .. component", planted: "../escape",
			body: "diff --git a/../escape b/../escape\nnew file mode 100644\n--- /dev/null\n+++ b/../escape\n@@ -0,0 +1 @@\n+pwned\n"},
		{name: "quoted dotdot", reason: "empty, . or .. component", planted: "../quoted",
			body: "diff --git \"a/\\056\\056/quoted\" \"b/\\056\\056/quoted\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/\\056\\056/quoted\"\n@@ -0,0 +1 @@\n+pwned\n"},
		{name: "absolute", reason: "no a/ or b/ prefix", planted: "../abs-planted",
			body: "diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ /abs-planted\n@@ -0,0 +1 @@\n+pwned\n"},
		{name: "git hook", reason: "reaches into .git", planted: ".git/hooks/post-checkout",
			body: "diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-checkout\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch /tmp/pwned\n"},
		{name: "git dir case folded", reason: "reaches into .git", planted: ".Git/config",
			body: "diff --git a/.Git/config b/.Git/config\nnew file mode 100644\n--- /dev/null\n+++ b/.Git/config\n@@ -0,0 +1 @@\n+[core]\n"},
		{name: "symlink out", reason: "mode 120000", planted: "escape-link", naiveHarm: true,
			body: "diff --git a/escape-link b/escape-link\nnew file mode 120000\n--- /dev/null\n+++ b/escape-link\n@@ -0,0 +1 @@\n+/etc\n\\ No newline at end of file\n"},
		{name: "gitlink", reason: "mode 160000", planted: "sub",
			body: "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000000000000000000000000000000000000.." + blob + "\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit " + blob + "\n"},
		{name: "gitmodules", reason: ".gitmodules", planted: ".gitmodules", naiveHarm: true,
			body: "diff --git a/.gitmodules b/.gitmodules\nnew file mode 100644\n--- /dev/null\n+++ b/.gitmodules\n@@ -0,0 +1,3 @@\n+[submodule \"x\"]\n+\tpath = x\n+\turl = ext::sh -c touch% /tmp/pwned\n"},
		{name: "through symlink on disk", reason: "goes through the symbolic link", planted: "out/planted",
			body: "diff --git a/out/planted b/out/planted\nnew file mode 100644\n--- /dev/null\n+++ b/out/planted\n@@ -0,0 +1 @@\n+pwned\n"},
		// A traditional diff after a git section's hunk: the header scan no longer looks, git's
		// own list of the paths (apply --numstat) does.
		{name: "smuggled after a hunk", reason: "reaches into .git", planted: ".git/info/attributes",
			body: "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n--- /dev/null\n+++ b/.git/info/attributes\n@@ -0,0 +1 @@\n+* filter=evil\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			repo := filepath.Join(parent, "repo")
			gitT(t, parent, "init", "-q", repo)
			writeFile(t, filepath.Join(repo, "a.txt"), "one\n")
			outside := filepath.Join(parent, "outside")
			if err := os.Mkdir(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(repo, "out")); err != nil {
				t.Fatal(err)
			}
			gitT(t, repo, "add", "-A")
			gitT(t, repo, "commit", "-qm", "base")
			if tc.naiveHarm {
				scratch := filepath.Join(t.TempDir(), "scratch")
				gitT(t, "", "clone", "-q", repo, scratch)
				naive(t, scratch, tc.body)
				if _, err := os.Lstat(filepath.Join(scratch, tc.planted)); err != nil {
					t.Fatalf("marker: plain git apply did not plant %s: %v", tc.planted, err)
				}
			}
			p := Patch{Base: gitT(t, repo, "rev-parse", "HEAD"), Body: []byte(tc.body)}
			_, err := (&Git{}).ApplyPatch(context.Background(), repo, p, ApplyOptions{})
			if !errors.Is(err, ErrPatchRefused) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v; want refused because %q", err, tc.reason)
			}
			if _, err := os.Lstat(filepath.Join(repo, tc.planted)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists after the refusal: %v", tc.planted, err)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("something was written outside the checkout: %v", entries)
			}
			if got := gitT(t, repo, "status", "--porcelain"); got != "" {
				t.Errorf("the checkout changed:\n%s", got)
			}
		})
	}
}

// naive applies body with plain git apply --index, as a user without apply-patch would.
func naive(t *testing.T, dir, body string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "p.diff")
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "apply", "--index", f)
}
