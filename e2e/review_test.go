package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// reviewAnswer is a fake answer of Cline: text plus a findings block.
func reviewAnswer(block string) string {
	return "fake:pong?text=" + url.QueryEscape("The change looks risky.\n\n```json\n"+block+"\n```")
}

const appV1 = "package main\n\nfunc main() {\n\ta := 1\n\t_ = a\n}\n"

// dirtyCheckout is a repository with staged, unstaged, untracked and ignored changes.
func dirtyCheckout(t *testing.T, dir string) {
	t.Helper()
	gitInit(t, dir, map[string]string{"app.go": appV1, "README.md": "hello\n", ".gitignore": "ignored.txt\n"})
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app.go", "package main\n\nfunc main() {\n\ta := 1\n\tb := a / 0\n\t_ = b\n}\n")
	write("staged.txt", "staged\n")
	gitOut(t, dir, "add", "staged.txt")
	write("notes.txt", "untracked notes\n")
	write("ignored.txt", "ignored\n")
}

// checkoutState is what must not change when a review runs: status, index, stash, refs,
// worktrees and every file's mtime.
func checkoutState(t *testing.T, dir string) string {
	t.Helper()
	idx, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "status:\n%s\nindex: %x\n", gitOut(t, dir, "--no-optional-locks", "status", "--porcelain", "--ignored"), idx)
	fmt.Fprintf(&b, "stash: %q\nrefs:\n%s\nworktrees:\n%s\n", gitOut(t, dir, "--no-optional-locks", "stash", "list"), gitOut(t, dir, "for-each-ref"), gitOut(t, dir, "worktree", "list", "--porcelain"))
	for _, f := range []string{"app.go", "README.md", "staged.txt", "notes.txt", "ignored.txt", ".git/index"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", f, st.ModTime().Format(time.RFC3339Nano))
	}
	return b.String()
}

// TestReviewUncommitted: review_cline of a dirty checkout reviews exactly the uncommitted work
// (staged, unstaged and untracked files; not the ignored one), hands Cline the diff, reads the
// findings block back and flags a finding outside the change; the checkout's status, index,
// stash, refs, worktrees and mtimes are untouched and no worktree is left.
func TestReviewUncommitted(t *testing.T) {
	e := newEnv(t)
	dirtyCheckout(t, e.work)
	before := checkoutState(t, e.work)
	block := `{"summary": "one bug", "findings": [` +
		`{"severity": "critical", "file": "app.go", "line": 5, "title": "division by zero", "detail": "a / 0 panics", "suggestion": "remove it"},` +
		`{"severity": "low", "file": "README.md", "line": 1, "title": "old readme", "detail": "not part of the change"},` +
		`{"severity": "info", "file": "notes.txt", "line": 1, "title": "notes", "detail": "untracked file reviewed"}]}`
	res, sc := e.call("review_cline", map[string]any{"prompt": reviewAnswer(block), "focus": "correctness"})
	if sc["ok"] != true {
		t.Fatalf("review failed: %v %v", sc["kind"], sc["message"])
	}
	rv, _ := sc["review"].(map[string]any)
	if rv == nil || rv["parsed"] != true || rv["summary"] != "one bug" || rv["target"] != "uncommitted" {
		t.Fatalf("review %v", rv)
	}
	files := map[string]string{}
	for _, f := range rv["files"].([]any) {
		m := f.(map[string]any)
		files[m["path"].(string)] = m["status"].(string)
	}
	if fmt.Sprint(files) != "map[app.go:M notes.txt:A staged.txt:A]" {
		t.Errorf("reviewed files %v, want app.go M, notes.txt A, staged.txt A (ignored.txt left out)", files)
	}
	fs := rv["findings"].([]any)
	outside := []bool{}
	for _, f := range fs {
		outside = append(outside, f.(map[string]any)["outsideDiff"] == true)
	}
	if fmt.Sprint(outside) != "[false true false]" {
		t.Errorf("findings outsideDiff %v, want [false true false]: %v", outside, fs)
	}
	if first := fs[0].(map[string]any); first["severity"] != "critical" || first["suggestion"] != "remove it" || first["line"] != float64(5) {
		t.Errorf("first finding %v", first)
	}
	// Cline got the diff, and the reviewed head holds the untracked file.
	recs := e.records()
	if len(recs) != 1 || !strings.Contains(strings.Join(recs[0].Argv, " "), "+\tb := a / 0") || !strings.Contains(strings.Join(recs[0].Argv, " "), "Focus of this review: correctness") {
		t.Errorf("the CLI's prompt lacks the diff or the focus: %v", recs)
	}
	if got := gitOut(t, e.work, "show", fmt.Sprint(rv["head"])+":notes.txt"); got != "untracked notes" {
		t.Errorf("the reviewed head's notes.txt = %q", got)
	}
	if recs[0].Cwd == e.work || strings.HasPrefix(recs[0].Cwd, e.work+"/") {
		t.Errorf("Cline ran in the checkout itself (%s), want a disposable worktree", recs[0].Cwd)
	}
	if after := checkoutState(t, e.work); after != before {
		t.Errorf("the checkout changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if wt, _ := sc["worktree"].(map[string]any); wt["removed"] != true {
		t.Errorf("worktree %v, want removed", wt)
	}
	if txt := mcpsession.Text(res); !strings.HasPrefix(txt, "The change looks risky.") {
		t.Errorf("text %q", txt)
	}
}

// TestReviewTargetsAndDegrades: base:<ref> reviews the branch against its merge base, commit:<sha>
// one commit; an answer without a findings block is still the review (with a warning); a
// nonexistent ref fails before Cline runs; a clean checkout's uncommitted review says it is empty.
func TestReviewTargetsAndDegrades(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"app.go": appV1})
	gitOut(t, e.work, "checkout", "-q", "-b", "feature")
	if err := os.WriteFile(filepath.Join(e.work, "feature.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitOut(t, e.work, "add", "-A")
	gitOut(t, e.work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "feature")
	sha := gitOut(t, e.work, "rev-parse", "HEAD")

	for _, target := range []string{"base:main", "commit:" + sha[:12]} {
		_, sc := e.call("review_cline", map[string]any{"target": target, "prompt": "fake:pong?text=No+block+here."})
		rv, _ := sc["review"].(map[string]any)
		if sc["ok"] != true || rv == nil || rv["head"] != sha || rv["parsed"] != false || len(rv["findings"].([]any)) != 0 {
			t.Fatalf("%s: %v", target, sc)
		}
		if got := fmt.Sprint(rv["files"]); !strings.Contains(got, "feature.go") || strings.Contains(got, "app.go") {
			t.Errorf("%s: files %s, want feature.go only", target, got)
		}
		if ws := fmt.Sprint(sc["warnings"]); !strings.Contains(ws, "no findings block") {
			t.Errorf("%s: warnings %s", target, ws)
		}
	}
	res, sc := e.call("review_cline", map[string]any{"target": "base:no-such-branch"})
	mcpsession.WantKind(t, res, sc, "workspace_setup_failed")
	res, sc = e.call("review_cline", map[string]any{"target": "HEAD~1"})
	mcpsession.WantKind(t, res, sc, "launch_failed")
	if n := len(e.records()); n != 2 {
		t.Errorf("the CLI ran %d times, want 2 (failures before the run start nothing)", n)
	}
	_, sc = e.call("review_cline", map[string]any{})
	if ws := fmt.Sprint(sc["warnings"]); sc["ok"] != true || !strings.Contains(ws, "changes nothing") {
		t.Errorf("an empty review: ok=%v warnings %s", sc["ok"], ws)
	}
}

// TestReviewCommand: `cline-mcp review` is the CI entry: SARIF or JSON out, exit 1 when a
// finding reaches --fail-on, 0 below it, 2 for bad flags, 3 when the review cannot run.
func TestReviewCommand(t *testing.T) {
	e := prepareEnv(t)
	dirtyCheckout(t, e.work)
	block := `{"summary": "s", "findings": [{"severity": "high", "file": "app.go", "line": 5, "title": "division by zero", "detail": "panics"}]}`
	run := func(extra ...string) (int, string, string) {
		argv, environ := e.server(nil)
		cmd := exec.Command(bins.ClineMCP, append(append([]string{"review"}, argv...), extra...)...)
		cmd.Env, cmd.Dir = environ, e.work
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}
	sarifPath := filepath.Join(e.root, "review.sarif")
	code, _, stderr := run("--prompt", reviewAnswer(block), "--format", "sarif", "--out", sarifPath, "--fail-on", "high")
	if code != 1 {
		t.Fatalf("exit %d with a high finding and --fail-on high, want 1\n%s", code, stderr)
	}
	b, err := os.ReadFile(sarifPath)
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string
		Runs    []struct {
			Results []struct {
				RuleID, Level string
				Locations     []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 1 {
		t.Fatalf("SARIF %v: %s", err, b)
	}
	if r := log.Runs[0].Results[0]; r.Level != "error" || r.Locations[0].PhysicalLocation.ArtifactLocation.URI != "app.go" || r.Locations[0].PhysicalLocation.Region.StartLine != 5 {
		t.Errorf("SARIF result %+v", r)
	}

	code, out, stderr := run("--prompt", reviewAnswer(block), "--format", "json", "--fail-on", "critical")
	var doc struct {
		OK     bool
		Review struct{ Findings []map[string]any }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || !doc.OK || len(doc.Review.Findings) != 1 {
		t.Errorf("json, --fail-on critical: exit %d, out %s\n%s", code, out, stderr)
	}
	if code, _, _ := run("--target", "HEAD"); code != 2 {
		t.Errorf("a bad target: exit %d, want 2", code)
	}
	if code, _, stderr := run("--cwd", e.root); code != 3 || !strings.Contains(stderr, "workspace_not_git") {
		t.Errorf("not a checkout: exit %d, want 3 with the kind\n%s", code, stderr)
	}
}

// TestReviewInTheBackground: a review runs as a background job too, and its result — findings
// included — is what cline_job returns when it is done.
func TestReviewInTheBackground(t *testing.T) {
	e := prepareEnv(t)
	e.start(jobsArgs(e)...)
	dirtyCheckout(t, e.work)
	block := `{"summary": "s", "findings": [{"severity": "low", "file": "app.go", "line": 5, "title": "t", "detail": "d"}]}`
	_, sc := e.call("review_cline", map[string]any{"prompt": reviewAnswer(block), "background": true})
	id, _ := sc["jobId"].(string)
	if id == "" {
		t.Fatalf("background answer %v", sc)
	}
	done, _ := e.waitJob(id)
	res, _ := done["result"].(map[string]any)
	rv, _ := res["review"].(map[string]any)
	if done["state"] != "succeeded" || rv == nil || rv["parsed"] != true || len(rv["findings"].([]any)) != 1 {
		t.Errorf("job %v, want the review with its finding", done)
	}
}
