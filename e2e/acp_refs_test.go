package e2e

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestACPRefMovesNeverRun: over ACP, apply_cline_edits on the host lets the agent's commands run
// except those that can move a git ref or write .git, which the policy rejects before they run
// (the ones a review found passing: reset --soft, branch -f, tag, stash, checkout -B,
// symbolic-ref, fetch into refs/heads, notes add, replace). Permitted commands between them run
// (the markers: their files exist), so the agent really asked for each; afterwards every ref,
// HEAD and the branch HEAD names are as before, and each rejection says "denied by policy".
func TestACPRefMovesNeverRun(t *testing.T) {
	e := prepareEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	gitOut(t, e.work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--allow-empty", "-qm", "second")
	refs := func() string {
		return gitOut(t, e.work, "for-each-ref", "--format=%(refname) %(objectname)") + "\nHEAD " +
			gitOut(t, e.work, "symbolic-ref", "HEAD") + " " + gitOut(t, e.work, "rev-parse", "HEAD")
	}
	before := refs()
	id := "-c user.name=x -c user.email=x@x "
	movers := [][]string{
		{"git reset --soft HEAD~1", "git branch -f side HEAD~1", "git tag v1", "git " + id + "stash"},
		{"git checkout -B main HEAD~1", "git symbolic-ref HEAD refs/heads/other", "git fetch . HEAD~1:refs/heads/fetched", "git " + id + "notes add -m x"},
		{"git replace HEAD HEAD~1"},
	}
	var cmds []string
	for i, group := range movers {
		// A permitted command first (it also leaves a change for git stash to take).
		cmds = append(cmds, "echo changed >> README.md && echo ran > marker"+string(rune('1'+i))+".txt")
		cmds = append(cmds, group...)
	}
	e.start(acpServerArgs(e)...)
	_, sc := e.call("apply_cline_edits", map[string]any{"prompt": "fake:run_each?" + url.Values{"cmd": cmds}.Encode()})
	wantOK(t, sc)
	for i := range movers {
		name := "marker" + string(rune('1'+i)) + ".txt"
		if b, err := os.ReadFile(filepath.Join(e.work, name)); err != nil || string(b) != "ran\n" {
			t.Fatalf("the permitted command before group %d did not run (%s: %q, %v): the test shows nothing", i+1, name, b, err)
		}
	}
	if after := refs(); after != before {
		t.Errorf("refs moved:\nbefore %s\nafter  %s", before, after)
	}
	rej, _ := sc["rejectedToolCalls"].([]any)
	if len(rej) != 9 {
		t.Fatalf("%d rejected tool calls, want the 9 ref movers: %v", len(rej), rej)
	}
	for i, r := range rej {
		reason, _ := r.(map[string]any)["reason"].(string)
		if !strings.HasPrefix(reason, "denied by policy: git ") || !strings.HasSuffix(reason, "can move a ref or write .git; do not retry") {
			t.Errorf("rejection %d: reason %q", i+1, reason)
		}
	}
}
