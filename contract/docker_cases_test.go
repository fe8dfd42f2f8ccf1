//go:build contract && linux

package contract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestDockerWorkspace: ask_cline_workspace in the real image answers from HEAD (not the dirty
// file) in a disposable worktree that is removed afterwards.
func TestDockerWorkspace(t *testing.T) {
	w := newWorld(t, inCwd(
		func(dir string) fakeprovider.Step {
			return fakeprovider.Tools(fakeprovider.Call{Name: "read_files", Arguments: map[string]any{"files": []string{filepath.Join(dir, "README.md")}}})
		},
		textTurn("README.md says hello."),
	), inDocker())
	if err := os.WriteFile(filepath.Join(w.work, "README.md"), []byte("uncommitted edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, sc := w.call("ask_cline_workspace", map[string]any{"prompt": "What does README.md say?"})
	mcpsession.WantOK(t, res, sc)
	chats := w.chats(2)
	wt := chats[0].WorkingDirectory()
	if wt == "" || wt == w.work || strings.HasPrefix(wt, w.work+string(filepath.Separator)) {
		t.Fatalf("Cline ran in %q, want a disposable worktree outside the checkout %q", wt, w.work)
	}
	read := strings.Join(flat(chats[1].Messages()), "\n")
	if !strings.Contains(read, "1 | hello") || strings.Contains(read, "uncommitted edit") {
		t.Errorf("the model read %q; want HEAD's README.md (hello), not the dirty file", mcpsession.Tail(read, 2000))
	}
	rep, _ := sc["worktree"].(map[string]any)
	if rep["removed"] != true {
		t.Errorf("got worktree report %v, want removed", rep)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("the worktree %s still exists (%v)", wt, err)
	}
	if list := git(t, w.work, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("git still knows other worktrees:\n%s", list)
	}
	wantCleanStderr(t, sc)
}

// TestDockerApplyEdit: apply_cline_edits in the real image: the model's editor calls change the
// checkout (the diff is computed on the host, the new file belongs to the caller), and its
// `git commit` fails on the read-only .git, so HEAD does not move.
func TestDockerApplyEdit(t *testing.T) {
	w := newWorld(t, editAndCommitScript(), inDocker())
	head := strings.TrimSpace(git(t, w.work, "rev-parse", "HEAD"))
	res, sc := w.call("apply_cline_edits", map[string]any{"prompt": "Create hello.txt, update README.md and commit"})
	mcpsession.WantOK(t, res, sc)
	wantEditNoCommit(t, w, sc, head)
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(w.work, "hello.txt"), &st); err != nil {
		t.Fatal(err)
	} else if st.Uid != dockerUID || st.Gid != dockerUID {
		t.Errorf("hello.txt belongs to %d:%d, want the caller %d:%d", st.Uid, st.Gid, dockerUID, dockerUID)
	}
	wantCleanStderr(t, sc)
}

// editAndCommitScript is the model of the apply tests in a container: it creates hello.txt and
// edits README.md, then tries to commit.
func editAndCommitScript() fakeprovider.Responder {
	return inCwd(
		func(dir string) fakeprovider.Step {
			return fakeprovider.Tools(
				editorCreate(dir, "hello.txt", "Hello from the fake model\n"),
				fakeprovider.Call{Name: "editor", Arguments: map[string]any{"path": filepath.Join(dir, "README.md"), "old_text": "hello", "new_text": "hello world"}},
			)
		},
		func(dir string) fakeprovider.Step {
			return fakeprovider.Tools(fakeprovider.Call{Name: "run_commands", Arguments: map[string]any{"commands": []string{
				"git -c user.name=m -c user.email=m@m commit -am sneaky"}}})
		},
		textTurn("Created hello.txt and updated README.md."),
	)
}

// wantEditNoCommit checks an editAndCommitScript result: the diff has both edits, HEAD did not
// move (the result's heads and the checkout's), and the commit's result shows the read-only .git.
func wantEditNoCommit(t *testing.T, w *world, sc map[string]any, head string) {
	t.Helper()
	diff := mcpsession.Str(sc, "diff")
	for _, want := range []string{"+Hello from the fake model", "-hello", "+hello world"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	if mcpsession.Str(sc, "headBefore") != head || mcpsession.Str(sc, "headAfter") != head {
		t.Errorf("got heads %s..%s, want %s unchanged", mcpsession.Str(sc, "headBefore"), mcpsession.Str(sc, "headAfter"), head)
	}
	if got := strings.TrimSpace(git(t, w.work, "rev-parse", "HEAD")); got != head {
		t.Errorf("HEAD moved to %s", got)
	}
	commit := strings.Join(flat(w.chats(3)[2].Messages()), "\n")
	if !strings.Contains(commit, "Read-only file system") {
		t.Errorf("the git commit's result does not show the read-only .git:\n%s", mcpsession.Tail(commit, 2000))
	}
}

// TestDockerOverride: -P/-m reach the request from the container; the host's providers.json is
// not touched (the run changed only its private copy).
func TestDockerOverride(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG from fake-model-2")), inDocker())
	before, err := os.ReadFile(w.providers)
	if err != nil {
		t.Fatal(err)
	}
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG", "provider": "openai-compatible", "model": "fake-model-2"})
	mcpsession.WantOK(t, res, sc)
	if got := w.chats(1)[0].Body["model"]; got != "fake-model-2" {
		t.Errorf("the request used model %v, want the override fake-model-2", got)
	}
	after, err := os.ReadFile(w.providers)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the host's providers.json changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestDockerTimeoutAndCancel: a provider that never answers ends in timeout (not retried: the
// deadline covers the whole call) and,
// in another call, a client cancel; each time the container is gone within 3 s.
func TestDockerTimeoutAndCancel(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Hang()), inDocker())
	pid := w.sess.Cmd.Process.Pid
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG", "timeoutSeconds": 6})
	mcpsession.WantKind(t, res, sc, "timeout")
	wantAttempts(t, sc, 1)
	if left := containersGone(pid, 3*time.Second); len(left) > 0 {
		t.Errorf("3 s after the timeout result these containers remain: %v", left)
	}

	// Under load the CLI may not have reached the model within 6 s: count what arrived so far.
	before := len(w.chats(-1))
	cancel, done := w.callUntilModel(before + 1)
	defer cancel()
	if len(serverContainers(pid)) == 0 {
		t.Fatal("no container runs while the CLI waits for the model")
	}
	start := time.Now()
	cancel()
	<-done
	if left := containersGone(pid, 10*time.Second); len(left) > 0 {
		t.Fatalf("%v after the cancel these containers remain: %v", time.Since(start), left)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the container took %v to disappear after the cancel, want under 3 s", d)
	}
}

// TestDockerConcurrent: three calls at once run in three containers and each gets its own answer.
func TestDockerConcurrent(t *testing.T) {
	w := newWorld(t, func(i int, r fakeprovider.Request) fakeprovider.Step {
		msgs := r.Messages()
		last := msgs[len(msgs)-1][1]
		for n := 1; n <= 3; n++ {
			if strings.Contains(last, fmt.Sprintf("task %d.", n)) {
				return fakeprovider.Text(fmt.Sprintf("answer %d", n))
			}
		}
		return fakeprovider.Text("which task?")
	}, inDocker())
	var wg sync.WaitGroup
	got := make([]string, 4)
	for n := 1; n <= 3; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			res, err := w.sess.CallErr(ctx, "ask_cline", map[string]any{"prompt": fmt.Sprintf("Do task %d.", n), "cwd": w.work}, nil)
			if err != nil {
				got[n] = "error: " + err.Error()
				return
			}
			sc, _ := res.StructuredContent.(map[string]any)
			got[n] = fmt.Sprintf("%v %s %s", sc["ok"], mcpsession.Str(sc, "text"), mcpsession.Str(sc, "message"))
		}()
	}
	wg.Wait()
	for n := 1; n <= 3; n++ {
		if want := fmt.Sprintf("true answer %d ", n); got[n] != want {
			t.Errorf("call %d: got %q, want %q", n, got[n], want)
		}
	}
	w.chats(3)
}

// TestDockerWrongCLIPath: --docker-cline naming a file the image lacks is launch_failed with the
// fix, at once and without a retry (an image cannot be mid-update).
func TestDockerWrongCLIPath(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), inDocker(), serverArgs("--docker-cline", "/usr/local/bin/clinee"))
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG"})
	mcpsession.WantKind(t, res, sc, "launch_failed")
	wantAttempts(t, sc, 1)
	if sc["retryable"] != false {
		t.Errorf("got retryable %v, want false", sc["retryable"])
	}
	if msg := mcpsession.Str(sc, "message"); !strings.Contains(msg, "--docker-cline") || !strings.Contains(msg, "/usr/local/bin/clinee") {
		t.Errorf("message %q does not name the path and the flag to fix it", msg)
	}
	w.chats(0)
}

// TestDockerNetworkNone: with --docker-network none the CLI in the container cannot reach its
// provider. It retries the refused connection six times (2+4+8+16+32 s of backoff, hard-coded
// in 3.0.65: maxRetries 5, no setting or variable changes it, and retry-after headers only come
// from a provider that answers) and exits 1 after ~62 s; the call fails before its own timeout
// as non_zero_exit naming the unreachable provider, and is not retried.
func TestDockerNetworkNone(t *testing.T) {
	w := newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), inDocker(), serverArgs("--docker-network", "none"))
	start := time.Now()
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG", "timeoutSeconds": 100})
	mcpsession.WantKind(t, res, sc, "non_zero_exit")
	wantAttempts(t, sc, 1)
	if msg := mcpsession.Str(sc, "message"); !strings.Contains(msg, "could not be reached") || !strings.Contains(msg, "ConnectionRefused") {
		t.Errorf("message %q does not say that the provider could not be reached", msg)
	}
	if sc["retryable"] != false {
		t.Errorf("got retryable %v, want false", sc["retryable"])
	}
	w.chats(0)
	t.Logf("--docker-network none: failed after %v: %s", time.Since(start).Round(100*time.Millisecond), mcpsession.Str(sc, "message"))
}
