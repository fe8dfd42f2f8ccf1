//go:build contract && linux

package contract

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// subdirCode plants, under dir, what the CLI runs from a workspace: a TaskStart hook in
// .clinerules/hooks and one in .cline/hooks, and a plugin module in .cline/plugins. Each leaves
// its own mark under marks when it runs. It returns the marks by the directory they come from.
func subdirCode(t *testing.T, dir, marks, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range []string{filepath.Join(".clinerules", "hooks"), filepath.Join(".cline", "hooks")} {
		mark := filepath.Join(marks, name+"-"+strings.ReplaceAll(d, string(filepath.Separator), "_"))
		writeFile(t, filepath.Join(dir, d, "TaskStart"), fmt.Sprintf("#!/bin/bash\ntouch %s\necho '{}'\n", mark), 0o755)
		out[filepath.Join(dir, d)] = mark
	}
	mark := filepath.Join(marks, name+"-plugin")
	writeFile(t, filepath.Join(dir, ".cline", "plugins", "mark.js"), fmt.Sprintf(`require("fs").writeFileSync(%q, "x");
export default { name: "mark-%s", manifest: { capabilities: ["tools"] }, setup(api) {} };
`, mark, name), 0o644)
	out[filepath.Join(dir, ".cline", "plugins")] = mark
	return out
}

// runCLIAlone runs the real CLI (no server) in cwd with the world's HOME and provider, with
// auto-approve, and fails the test when it does not exit 0.
func runCLIAlone(t *testing.T, w *world, cwd string) {
	t.Helper()
	args := cline.Args(cline.Request{Prompt: "Summarise the directory please", Cwd: cwd, Thinking: "none", AutoApprove: true})
	env := cline.Env([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "TMPDIR=" + filepath.Join(w.root, "tmp"), "CONTRACT_RUN_TAG=" + w.tag}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.cli, args...)
	cmd.Env, cmd.Dir = env, cwd
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("real CLI in %s: %v\nstderr: %s\nstdout: %s", cwd, err, mcpsession.Tail(stderr.String(), 3000), mcpsession.Tail(stdout.String(), 3000))
	}
}

// ranFrom lists the directories of code whose mark exists, and removes the marks.
func ranFrom(code map[string]string) []string {
	var ran []string
	for d, m := range code {
		if _, err := os.Stat(m); err == nil {
			ran = append(ran, d)
		}
		_ = os.Remove(m)
	}
	return sorted(ran)
}

// TestAnalysisRefusesSubdirHooks: the cwd of a call may lie below the repository's top. The
// CLI takes as its workspace what `git rev-parse --show-toplevel` answers in the run's directory,
// else (no git, or git refuses: a repository owned by another user is "dubious" to git) the
// run's directory itself, and runs that workspace's hooks and plugins. The test shows both on
// the real CLI — in the user's own repository nothing of the subdirectory runs; in one owned by
// another uid every hook and the plugin of the subdirectory run — and then that ask_cline on the
// host refuses that subdirectory with launch_failed naming the directories, before any request,
// and nothing ran.
func TestAnalysisRefusesSubdirHooks(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("done")))
	marks := filepath.Join(w.root, "marks")
	if err := os.MkdirAll(marks, 0o777); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(w.work, "mid", "sub")
	writeFile(t, filepath.Join(sub, "main.go"), "package sub\n", 0o644)
	code := subdirCode(t, sub, marks, "cwd")
	git(t, w.work, "add", "-A")
	git(t, w.work, "commit", "-q", "-m", "hooks below the top")

	// The user's own repository: the CLI's workspace is the top, so the subdirectory's code
	// does not run.
	runCLIAlone(t, w, sub)
	if ran := ranFrom(code); len(ran) > 0 {
		t.Errorf("in the user's own repository the CLI ran code from %v: its workspace is not the git top", ran)
	}

	// Owned by another user: git refuses the repository, the CLI falls back to its directory.
	if out, err := exec.Command("chown", "-R", "4242:4242", w.work).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v: %s", err, out)
	}
	top := exec.Command("git", "-C", sub, "rev-parse", "--show-toplevel")
	top.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home}
	if out, err := top.CombinedOutput(); err == nil || !strings.Contains(string(out), "dubious ownership") {
		t.Fatalf("git rev-parse in a repository of uid 4242: %v %s, want git's dubious-ownership refusal", err, out)
	}
	runCLIAlone(t, w, sub)
	ran := ranFrom(code)
	t.Logf("the CLI in %s ran code from %v", sub, ran)
	if len(ran) != len(code) {
		t.Fatalf("the CLI ran code from %v, want all of %d planted directories: the setup is not what the test thinks", ran, len(code))
	}

	before := len(w.chats(-1))
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Summarise the directory please", "cwd": sub})
	mcpsession.WantKind(t, res, sc, "launch_failed")
	msg := mcpsession.Str(sc, "message")
	for _, d := range ran {
		if !strings.Contains(msg, d) {
			t.Errorf("message %q does not name %s, which the CLI would run", msg, d)
		}
	}
	wantAttempts(t, sc, 1)
	if n := len(w.chats(-1)) - before; n != 0 {
		t.Errorf("the refused analysis call sent %d request(s) to the provider", n)
	}
	if ran := ranFrom(code); len(ran) > 0 {
		t.Errorf("code from %v ran during the refused analysis call", ran)
	}
}
