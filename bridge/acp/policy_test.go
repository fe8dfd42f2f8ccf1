package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestCommitCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want string // "" allowed, else a substring of the reason
	}{
		{"echo hi > out.txt", ""},
		{"git status --porcelain", ""},
		{"git log -1 && git diff", ""},
		{"git add -A", ""},
		{"grep -r commit .", ""},
		{"echo 'git commit -m x'", ""},
		{"git commit -m x", "git commit"},
		{"git add -A && git commit -qm sneaky", "git commit"},
		{"git -c user.name=m -c user.email=m@m commit -qm x", "git commit"},
		{"git -C sub --no-pager commit --allow-empty -m x", "git commit"},
		{"/usr/bin/git commit -m x", "git commit"},
		{`git "commit" -m x`, "git commit"},
		{`git com\mit -m x`, "git commit"},
		{"env GIT_AUTHOR_NAME=x git commit -m x", "git commit"},
		{"FOO=1 git commit -m x", "git commit"},
		{"sudo -u me git merge main", "git merge"},
		{"ls | xargs -0 git rebase", "git rebase"},
		{"git cherry-pick abc", "git cherry-pick"},
		{"git revert HEAD", "git revert"},
		{"git am < p.patch", "git am"},
		{"git pull", "git pull"},
		{"git update-ref refs/heads/x HEAD", "git update-ref"},
		{"git commit-tree HEAD^{tree}", "git commit-tree"},
		{"echo $(git commit -m x)", "git commit"},
		{"(cd sub && git commit -m x)", "git commit"},
		{"if true; then git commit -m x; fi", "git commit"},
		{`sh -c "git commit -m x"`, "git commit"},
		{`bash -c 'cd sub; git commit -m x'`, "git commit"},
		{`eval "git commit -m x"`, "git commit"},
		{"git $SUB -m x", "computed subcommand"},
		{"$GIT commit -m x", "computed"},
		{`sh -c "$CMD"`, "computed"},
		{"git commit -m 'unterminated", "cannot be parsed"},
		{"eval eval eval eval eval eval git status", "too deeply"},
		{"env FOO=1 ls", ""},
		{"timeout 5 git push", ""},
	} {
		got := CommitCommand(tc.cmd)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CommitCommand(%q) = %q, want %q", tc.cmd, got, tc.want)
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
