//go:build contract && linux

package contract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// TestReviewUncommittedRealCLI: review_cline with the real CLI. The CLI takes the review prompt
// (with the diff) as its one argument, runs in the disposable worktree of the snapshot — where
// it reads the untracked file the user has not committed — and its answer's findings block comes
// back as findings; the user's checkout is as it was.
func TestReviewUncommittedRealCLI(t *testing.T) {
	block := "Reviewed.\n\n```json\n{\"summary\": \"one issue\", \"findings\": [{\"severity\": \"medium\", \"file\": \"notes.txt\", \"line\": 1, \"title\": \"todo left\", \"detail\": \"a TODO in the notes\"}]}\n```"
	w := newWorld(t, inCwd(
		func(dir string) fakeprovider.Step {
			return fakeprovider.Tools(fakeprovider.Call{Name: "read_files", Arguments: map[string]any{"files": []string{filepath.Join(dir, "notes.txt")}}})
		},
		textTurn(block),
	))
	if err := os.WriteFile(filepath.Join(w.work, "README.md"), []byte("hello, reviewed edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.work, "notes.txt"), []byte("TODO: untracked notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	status := git(t, w.work, "--no-optional-locks", "status", "--porcelain")
	res, sc := w.call("review_cline", map[string]any{"focus": "leftovers"})
	mcpsession.WantOK(t, res, sc)
	rv, _ := sc["review"].(map[string]any)
	fs, _ := rv["findings"].([]any)
	if rv["parsed"] != true || len(fs) != 1 || fs[0].(map[string]any)["outsideDiff"] == true {
		t.Fatalf("review %v", rv)
	}
	chats := w.chats(2)
	first := strings.Join(flat(chats[0].Messages()), "\n")
	if !strings.Contains(first, "+hello, reviewed edit") || !strings.Contains(first, "Focus of this review: leftovers") {
		t.Errorf("the model's first request lacks the diff or the focus:\n%.2000s", first)
	}
	wt := chats[0].WorkingDirectory()
	if wt == w.work || strings.HasPrefix(wt, w.work+string(filepath.Separator)) {
		t.Fatalf("Cline ran in %q, the user's checkout, not a disposable worktree", wt)
	}
	if read := strings.Join(flat(chats[1].Messages()), "\n"); !strings.Contains(read, "TODO: untracked notes") {
		t.Errorf("the model did not read the untracked file in the worktree: %.2000s", read)
	}
	if got := git(t, w.work, "--no-optional-locks", "status", "--porcelain"); got != status {
		t.Errorf("the checkout's status changed: %q, was %q", got, status)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("the worktree %s still exists (%v)", wt, err)
	}
}
