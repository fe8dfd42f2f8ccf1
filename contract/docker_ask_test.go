//go:build contract && linux

package contract

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestDockerAskTextReadCommand: in the real image, ask_cline answers a plain prompt, then reads a
// file and runs `git log` (run_commands through the image's /bin/bash, git with safe.directory=*
// for a checkout owned by a uid the image does not know). Nothing warns: the workspace is
// mounted read-only, so commands are part of the Docker analysis policy.
func TestDockerAskTextReadCommand(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), inDocker())
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG"})
	mcpsession.WantOK(t, res, sc)
	if got := mcpsession.Str(sc, "text"); got != "PONG" {
		t.Errorf("got text %q, want PONG", got)
	}
	if iso := mcpsession.Str(sc, "isolation"); iso != "docker" {
		t.Errorf("got isolation %q, want docker", iso)
	}
	r := w.chats(1)[0]
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("got Authorization %q, want the saved key from the settings copy", got)
	}
	if wd := r.WorkingDirectory(); wd != w.work {
		t.Errorf("Cline worked in %q, want the call's cwd %q at the same path inside the container", wd, w.work)
	}
	wantCleanStderr(t, sc)

	w.prov.SetResponder(inCwd(
		func(dir string) fakeprovider.Step {
			return fakeprovider.Tools(
				fakeprovider.Call{Name: "read_files", Arguments: map[string]any{"files": []string{filepath.Join(dir, "README.md")}}},
				fakeprovider.Call{Name: "run_commands", Arguments: map[string]any{"commands": []string{"git log --format=%s", "touch " + filepath.Join(dir, "pwned")}}},
			)
		},
		textTurn("README says hello; the last commit is init."),
	))
	res, sc = w.call("ask_cline", map[string]any{"prompt": "What does README.md say, and what is the last commit?"})
	mcpsession.WantOK(t, res, sc)
	chats := w.chats(3)[1:] // after the PONG call's request
	if tools := chats[0].ToolNames(); !slices.Contains(tools, "run_commands") || slices.Contains(tools, "editor") {
		t.Errorf("docker ask_cline offers %v, want run_commands without editor", tools)
	}
	results := strings.Join(flat(chats[1].Messages()), "\n")
	for _, want := range []string{"1 | hello", "init", "Read-only file system"} {
		if !strings.Contains(results, want) {
			t.Errorf("the tool results the model got lack %q:\n%s", want, mcpsession.Tail(results, 3000))
		}
	}
	if warns := withoutOpenEgress(sc["warnings"]); len(warns) > 0 {
		t.Errorf("got warnings %v, want none (the failed touch is not a successful mutation; commands are allowed in Docker)", warns)
	}
	if st := git(t, w.work, "status", "--porcelain"); st != "" {
		t.Errorf("git status after ask_cline: %q, want clean", st)
	}
	wantCleanStderr(t, sc)
}

// withoutOpenEgress drops the warning every result of a --docker-egress open world carries (the
// relay worlds share the relay's network namespace, which needs open).
func withoutOpenEgress(ws any) []any {
	var out []any
	list, _ := ws.([]any)
	for _, w := range list {
		if s, _ := w.(string); !strings.Contains(s, "--docker-egress open") {
			out = append(out, w)
		}
	}
	return out
}

// wantCleanStderr fails when the CLI's stderr shows that the image lacks something it runs
// (/bin/sh: 1: hostname: not found, posix_spawn ENOENT, ...).
func wantCleanStderr(t *testing.T, sc map[string]any) {
	t.Helper()
	tail := mcpsession.Str(sc, "stderrTail")
	for _, bad := range []string{"not found", "ENOENT", "No such file"} {
		if strings.Contains(tail, bad) {
			t.Errorf("the CLI's stderr in the image says %q:\n%s", bad, tail)
		}
	}
}
