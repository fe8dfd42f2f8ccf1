//go:build contract && linux

package contract

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// inCwd answers with tool calls whose paths are absolute in the directory Cline says it works in
// (the work tree, or the disposable worktree), like the recordings' editor calls.
func inCwd(turns ...func(dir string) fakeprovider.Step) fakeprovider.Responder {
	return func(i int, r fakeprovider.Request) fakeprovider.Step {
		dir := r.WorkingDirectory()
		if dir == "" {
			return fakeprovider.Text("no Working Directory in the system prompt")
		}
		return turns[min(i, len(turns)-1)](dir)
	}
}

func editorCreate(dir, name, text string) fakeprovider.Call {
	return fakeprovider.Call{Name: "editor", Arguments: map[string]any{"path": filepath.Join(dir, name), "new_text": text}}
}

func textTurn(s string) func(string) fakeprovider.Step {
	return func(string) fakeprovider.Step { return fakeprovider.Text(s) }
}

// TestApplyClineEditsDiff: the model's editor calls change the checkout and the server returns
// exactly that diff (b_edit_autoapprove_true through the server).
func TestApplyClineEditsDiff(t *testing.T) {
	w := newWorld(t, inCwd(
		func(dir string) fakeprovider.Step {
			s := fakeprovider.Tools(
				editorCreate(dir, "hello.txt", "Hello from the fake model\n"),
				fakeprovider.Call{Name: "editor", Arguments: map[string]any{"path": filepath.Join(dir, "README.md"), "old_text": "hello", "new_text": "hello world"}},
			)
			s.Text = "I will create hello.txt and update README.md."
			return s
		},
		textTurn("Created hello.txt and updated README.md."),
	))
	head := strings.TrimSpace(git(t, w.work, "rev-parse", "HEAD"))
	res, sc := w.call("apply_cline_edits", map[string]any{"prompt": "Create hello.txt and update README.md"})
	mcpsession.WantOK(t, res, sc)
	if got := mcpsession.Str(sc, "text"); got != "Created hello.txt and updated README.md." {
		t.Errorf("got text %q", got)
	}
	diff := mcpsession.Str(sc, "diff")
	for _, want := range []string{"+Hello from the fake model", "-hello", "+hello world", "hello.txt", "README.md"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	files, _ := sc["changedFiles"].([]any)
	got := map[string]string{}
	for _, f := range files {
		m, _ := f.(map[string]any)
		got[mcpsession.Str(m, "path")] = mcpsession.Str(m, "status")
	}
	if len(got) != 2 || got["hello.txt"] != "A" || got["README.md"] != "M" {
		t.Errorf("got changedFiles %v, want hello.txt A and README.md M", got)
	}
	if mcpsession.Str(sc, "headBefore") != head || mcpsession.Str(sc, "headAfter") != head {
		t.Errorf("got heads %s..%s, want %s unchanged", mcpsession.Str(sc, "headBefore"), mcpsession.Str(sc, "headAfter"), head)
	}
	if b, err := os.ReadFile(filepath.Join(w.work, "README.md")); err != nil || string(b) != "hello world\n" {
		t.Errorf("README.md on disk is %q (%v), want the edit", b, err)
	}
	r := w.chats(2)[0]
	if tools := r.ToolNames(); !slices.Contains(tools, "editor") || !slices.Contains(tools, "run_commands") {
		t.Errorf("apply_cline_edits must offer editor and run_commands, the request offered %v", tools)
	}
	if out := w.chats(2)[1].Messages(); !strings.Contains(lastTool(out), "File created successfully") && !strings.Contains(strings.Join(flat(out), "\n"), "File created successfully") {
		t.Errorf("the second request does not carry the editor's result: %q", out)
	}
}

// TestAskClineCannotEdit: the analysis tool disables editor and run_commands; the request's tool
// list proves it, and the model's attempts change nothing (x_tools_disabled_readonly).
func TestAskClineCannotEdit(t *testing.T) {
	w := newWorld(t, inCwd(
		func(dir string) fakeprovider.Step { return fakeprovider.Tools(editorCreate(dir, "hello.txt", "hi\n")) },
		func(dir string) fakeprovider.Step {
			return fakeprovider.Tools(fakeprovider.Call{Name: "run_commands", Arguments: map[string]any{"commands": []string{"touch " + filepath.Join(dir, "pwned")}}})
		},
		textTurn("Done."),
	))
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Read README.md and create hello.txt"})
	mcpsession.WantOK(t, res, sc)
	if got := mcpsession.Str(sc, "text"); got != "Done." {
		t.Errorf("got text %q, want Done.", got)
	}
	chats := w.chats(3)
	for i, r := range chats {
		tools := r.ToolNames()
		if slices.Contains(tools, "editor") || slices.Contains(tools, "run_commands") {
			t.Errorf("request %d offers %v: editor/run_commands must be disabled for ask_cline", i, tools)
		}
		if !slices.Contains(tools, "read_files") {
			t.Errorf("request %d offers %v: read_files must stay available", i, tools)
		}
	}
	if !strings.Contains(strings.Join(flat(chats[1].Messages()), "\n"), "unavailable tool 'editor'") {
		t.Errorf("the CLI did not reject the editor call as unavailable: %q", chats[1].Messages())
	}
	for _, f := range []string{"hello.txt", "pwned"} {
		if _, err := os.Stat(filepath.Join(w.work, f)); !os.IsNotExist(err) {
			t.Errorf("ask_cline changed the work tree: %s exists (%v)", f, err)
		}
	}
	if st := git(t, w.work, "status", "--porcelain"); st != "" {
		t.Errorf("git status after ask_cline: %q, want clean", st)
	}
}

// TestWorkspaceAnswersFromWorktree: ask_cline_workspace runs Cline in a disposable worktree of
// HEAD (the model reads the committed file, not the dirty one) and removes it afterwards.
func TestWorkspaceAnswersFromWorktree(t *testing.T) {
	w := newWorld(t, inCwd(
		func(dir string) fakeprovider.Step {
			return fakeprovider.Tools(fakeprovider.Call{Name: "read_files", Arguments: map[string]any{"files": []string{filepath.Join(dir, "README.md")}}})
		},
		textTurn("README.md says hello."),
	))
	if err := os.WriteFile(filepath.Join(w.work, "README.md"), []byte("uncommitted edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, sc := w.call("ask_cline_workspace", map[string]any{"prompt": "What does README.md say?"})
	mcpsession.WantOK(t, res, sc)
	if got := mcpsession.Str(sc, "text"); got != "README.md says hello." {
		t.Errorf("got text %q", got)
	}
	chats := w.chats(2)
	wt := chats[0].WorkingDirectory()
	if wt == w.work || strings.HasPrefix(wt, w.work+string(filepath.Separator)) {
		t.Fatalf("Cline ran in %q, the user's checkout, not a disposable worktree", wt)
	}
	read := strings.Join(flat(chats[1].Messages()), "\n")
	if !strings.Contains(read, "hello") || strings.Contains(read, "uncommitted edit") {
		t.Errorf("the model read %q; want HEAD's README.md (hello), not the dirty file", read)
	}
	rep, _ := sc["worktree"].(map[string]any)
	if rep["removed"] != true || mcpsession.Str(rep, "commit") != strings.TrimSpace(git(t, w.work, "rev-parse", "HEAD")) {
		t.Errorf("got worktree report %v, want removed and HEAD's commit", rep)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("the worktree %s still exists (%v)", wt, err)
	}
	if list := git(t, w.work, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("git still knows other worktrees:\n%s", list)
	}
	if b, _ := os.ReadFile(filepath.Join(w.work, "README.md")); string(b) != "uncommitted edit\n" {
		t.Errorf("the user's dirty README.md became %q", b)
	}
}

func flat(msgs [][2]string) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m[0]+": "+m[1])
	}
	return out
}

func lastTool(msgs [][2]string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i][0] == "tool" {
			return msgs[i][1]
		}
	}
	return ""
}

// TestSeedPolicyDeniedToolsAbort: with --analysis-policy seed the CLI runs with --auto-approve
// false, denies every tool and aborts after three denied iterations with exit 0
// (b_denied_tools_mistake_limit); the server reports that as a non-transient failure naming the
// tool, and nothing is written.
func TestSeedPolicyDeniedToolsAbort(t *testing.T) {
	w := newWorld(t, inCwd(func(dir string) fakeprovider.Step { return fakeprovider.Tools(editorCreate(dir, "x.txt", "x\n")) }),
		serverArgs("--analysis-policy", "seed"))
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Create x.txt please"})
	mcpsession.WantKind(t, res, sc, "non_zero_exit")
	wantAttempts(t, sc, 1)
	if !strings.Contains(mcpsession.Str(sc, "message"), "editor") {
		t.Errorf("message %q does not name the denied tool", mcpsession.Str(sc, "message"))
	}
	if sc["exitCode"] != float64(0) {
		t.Errorf("got exitCode %v, want the CLI's 0 (the abort is only visible in the event stream)", sc["exitCode"])
	}
	chats := w.chats(3)
	if !strings.Contains(strings.Join(flat(chats[1].Messages()), "\n"), "requires approval") {
		t.Errorf("the CLI did not deny the editor call for approval: %q", chats[1].Messages())
	}
	if _, err := os.Stat(filepath.Join(w.work, "x.txt")); !os.IsNotExist(err) {
		t.Errorf("x.txt was written (%v)", err)
	}
}
