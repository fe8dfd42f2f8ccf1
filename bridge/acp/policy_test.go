package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestGitCommand: the apply policy's command check lets through only git commands that can
// neither move a ref nor write .git, in every form a shell line can take (env prefixes, git's
// global options, quoting, sh -c, chains, substitutions, wrappers), and rejects what it cannot read.
func TestGitCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want string // "" allowed, else a substring of the reason
	}{
		// Allowed: reading, and writing only the working tree.
		{"echo hi > out.txt", ""},
		{"go test ./... && go vet ./...", ""},
		{"git status --porcelain", ""},
		{"git log -1 && git diff", ""},
		{"git -C sub --no-pager log --oneline -3", ""},
		{"git show HEAD:README.md | head", ""},
		{"git ls-files; git grep -n TODO; git blame x.go; git rev-parse HEAD; git cat-file -p HEAD", ""},
		{"git branch", ""},
		{"git branch -a --show-current", ""},
		{"git branch --list 'feat*'", ""},
		{"git tag", ""},
		{"git tag -l 'v*'", ""},
		{"git stash list", ""},
		{"git remote -v", ""},
		{"git checkout -- a.go b.go", ""},
		{"git restore a.go", ""},
		{"git apply fix.patch", ""},
		{"git rev-parse --git-dir", ""},
		{"grep -r commit .", ""},
		{"echo 'git commit -m x'", ""},
		{"env FOO=1 ls", ""},
		{"timeout 5 git status", ""},
		{"echo $(git rev-parse HEAD)", ""},
		{"bash build.sh", ""},
		{"git", ""},
		{"git --version", ""},
		// The ref movers the review found, and the classic commit makers.
		{"git reset --soft HEAD~1", "git reset can move a ref or write .git"},
		{"git reset --hard", "git reset"},
		{"git branch -f main HEAD~1", "git branch"},
		{"git branch newbranch", "git branch"},
		{"git branch -D old", "git branch"},
		{"git tag v1", "git tag"},
		{"git tag -f v1 HEAD~1", "git tag"},
		{"git stash", "git stash"},
		{"git stash push -m x", "git stash"},
		{"git stash pop", "git stash"},
		{"git checkout -B main HEAD~1", "git checkout"},
		{"git checkout other", "git checkout"},
		{"git checkout -b new", "git checkout"},
		{"git switch other", "git switch"},
		{"git symbolic-ref HEAD refs/heads/other", "git symbolic-ref"},
		{"git fetch . HEAD~1:refs/heads/main", "git fetch"},
		{"git notes add -m x", "git notes"},
		{"git replace HEAD HEAD~1", "git replace"},
		{"git update-ref refs/heads/x HEAD", "git update-ref"},
		{"git commit -m x", "git commit"},
		{"git add -A", "git add"},
		{"git restore --staged a.go", "git restore"},
		{"git apply --index fix.patch", "git apply"},
		{"git merge x; git rebase y", "git merge"},
		{"git cherry-pick abc", "git cherry-pick"},
		{"git pull", "git pull"},
		{"git push", "git push"},
		{"git gc --prune=now", "git gc"},
		{"git config user.name x", "git config"},
		{"git worktree add ../x", "git worktree"},
		{"git reflog expire --all", "git reflog"},
		// Every form the line can take.
		{"GIT_DIR=../other/.git git status", "GIT_DIR"},
		{"FOO=1 git reset --soft HEAD~1", "git reset"},
		{"env GIT_PAGER=evil git log", "GIT_PAGER"},
		{"export GIT_EXTERNAL_DIFF=evil; git diff", "GIT_EXTERNAL_DIFF"},
		{"git -C sub reset --soft HEAD~1", "git reset"},
		{"git -c core.fsmonitor=evil status", "git -c"},
		{"git -c user.name=m tag v1", "git tag"},
		{"git -c user.name=m -c user.email=m@m commit -qm x", "git commit"},
		{"git --git-dir=x log", "git --git-dir"},
		{"git -p log", "git -p"},
		{`git "reset" --soft HEAD~1`, "git reset"},
		{`git 're'set --soft HEAD~1`, "git reset"},
		{`git re\set --soft HEAD~1`, "git reset"},
		{"/usr/bin/git branch -f main HEAD~1", "git branch"},
		{`sh -c "git stash"`, "git stash"},
		{`bash -c 'cd sub; git tag v1'`, "git tag"},
		{"make && git symbolic-ref HEAD refs/heads/x", "git symbolic-ref"},
		{"true || git notes add -m x", "git notes"},
		{"ls; git replace a b", "git replace"},
		{"echo $(git reset --soft HEAD~1)", "git reset"},
		{"echo `git stash`", "git stash"},
		{"(cd sub && git checkout -B x)", "git checkout"},
		{"if true; then git fetch . a:refs/heads/b; fi", "git fetch"},
		{"f() { git tag v2; }; f", "git tag"},
		{`eval "git branch -f x"`, "git branch"},
		{"sudo -u me git merge main", "git merge"},
		{"timeout 5 git push", "git push"},
		{"nohup git stash &", "git stash"},
		{"find . -name x -exec git add {} ;", "git add"},
		{"ls | xargs -0 git log", "xargs supplies git"},
		{"echo 'git commit -am x' | sh", "stdin"},
		{"git log --output=.git/refs/heads/main", ".git"},
		{"git diff --ext-diff", "--ext-diff"},
		{"git grep -Oevil x", "-O"},
		{"echo abc > .git/refs/heads/main", "redirect writes into .git"},
		{"cp HEAD .git/refs/heads/x", ".git"},
		{"git $SUB -m x", "computed"},
		{"$GIT commit -m x", "computed"},
		{`sh -c "$CMD"`, "computed"},
		{"git log 'unterminated", "cannot be parsed"},
		{"eval eval eval eval eval eval git status", "too deeply"},
	} {
		got := GitCommand(tc.cmd)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("GitCommand(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

func TestPolicies(t *testing.T) {
	in := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	call := func(tool, kind string, input json.RawMessage) ToolCall {
		return ToolCall{Tool: tool, Kind: kind, Title: tool + ": x", Input: input}
	}
	cmds := func(c ...string) json.RawMessage { return in(map[string]any{"commands": c}) }
	for _, tc := range []struct {
		name   string
		policy Policy
		call   ToolCall
		allow  bool
	}{
		{"read-only read_files", ReadOnly(false), call("read_files", "read", nil), true},
		{"read-only search_codebase", ReadOnly(false), call("search_codebase", "search", nil), true},
		{"read-only editor", ReadOnly(false), call("editor", "edit", nil), false},
		{"read-only apply_patch is kind other", ReadOnly(false), call("apply_patch", "other", nil), false},
		{"read-only: a read kind does not make editor a read", ReadOnly(false), call("editor", "read", nil), false},
		{"read-only: read_files with another kind", ReadOnly(false), call("read_files", "edit", nil), false},
		{"read-only unknown tool", ReadOnly(false), call("", "read", nil), false},
		{"read-only run_commands on the host", ReadOnly(false), call("run_commands", "execute", cmds("ls")), false},
		{"read-only run_commands in a container", ReadOnly(true), call("run_commands", "execute", cmds("ls")), true},
		{"read-only fetch", ReadOnly(true), call("fetch_web_content", "fetch", nil), false},
		{"edits editor", Edits(), call("editor", "edit", nil), true},
		{"edits apply_patch", Edits(), call("apply_patch", "other", nil), true},
		{"edits a command", Edits(), call("run_commands", "execute", cmds("go test ./...")), true},
		{"edits a commit", Edits(), call("run_commands", "execute", cmds("go vet", "git commit -am x")), false},
		{"edits a ref move", Edits(), call("run_commands", "execute", cmds("git reset --soft HEAD~1")), false},
		{"edits {command: ...}", Edits(), call("run_commands", "execute", in(map[string]any{"command": "git commit"})), false},
		{"edits object commands", Edits(), call("run_commands", "execute", in(map[string]any{"commands": []any{map[string]any{"command": "git merge x"}}})), false},
		{"edits an unreadable command", Edits(), call("run_commands", "execute", in(map[string]any{"commands": 5})), false},
		{"edits an execute kind without input", Edits(), call("", "execute", nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.policy(context.Background(), tc.call)
			if d.Allow != tc.allow || (!d.Allow && d.Reason == "") {
				t.Errorf("got %+v, want allow %v (with a reason when rejected)", d, tc.allow)
			}
		})
	}
}

func TestToolName(t *testing.T) {
	for title, want := range map[string]string{
		`editor: {"path":"x"}`:            "editor",
		"run_commands: echo hi > out.txt": "run_commands",
		`apply_patch: {"input":"***`:      "apply_patch",
		"Editor: x":                       "",
		"no colon":                        "",
		"":                                "",
		"read_files:":                     "read_files",
	} {
		if got := toolName(title); got != want {
			t.Errorf("toolName(%q) = %q, want %q", title, got, want)
		}
	}
}

// TestEditsReason: a rejected command's reason tells the agent it was the policy and not to retry.
func TestEditsReason(t *testing.T) {
	in, _ := json.Marshal(map[string]any{"commands": []string{"git status", "git branch -f main HEAD~1"}})
	d := Edits()(context.Background(), ToolCall{Tool: "run_commands", Kind: "execute", Input: in})
	want := "denied by policy: git branch can move a ref or write .git; do not retry"
	if d.Allow || d.Reason != want {
		t.Errorf("got %+v, want the rejection %q", d, want)
	}
}
