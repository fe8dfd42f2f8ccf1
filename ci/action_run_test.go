package ci

import (
	"strconv"
	"strings"
	"testing"
)

const marker = "<!-- cline-mcp-review-gate -->"

// TestActionPullRequest runs the Action's steps on a pull request four times, as pushes would:
// findings (the job fails, one comment is created), passed (the same comment is updated, the
// job passes), an answer without findings (no verdict: fails, updated again, nothing to upload)
// and an install that fails (the gate still reports no-verdict, the comment says so). A comment
// of someone else carrying the marker is never touched, and the token never reaches a log.
func TestActionPullRequest(t *testing.T) {
	needTools(t)
	b := binaries(t)
	w := newWorld(t)
	gh := newFakeGitHub(t, "octo/app", "ghs_faketoken123")
	gh.add("mallory", marker+"\nnot the bot's")
	gh.add("github-actions[bot]", "an unrelated bot comment")
	with := func(prompt string) map[string]string {
		return map[string]string{"binary-path": b.ClineMCP, "isolation": "host", "args": fakeArgs(b), "timeout": "60", "prompt": prompt}
	}
	ourComments := func() []ghComment {
		var out []ghComment
		for _, c := range gh.ours() {
			if strings.HasPrefix(c.Body, marker) {
				out = append(out, c)
			}
		}
		return out
	}

	r := newRunner(t, w, gh, with(answer(blockHighLow)))
	if failed := r.runAll(); !failed || r.output("verdict") != "findings" || r.output("findings") != "1" {
		t.Fatalf("first push: failed %v, verdict %q, findings %q\n%s", failed, r.output("verdict"), r.output("findings"), strings.Join(r.stepLogs, "\n"))
	}
	if strings.Join(r.ran, ",") != "install,review,step3" {
		t.Errorf("steps run: %v", r.ran)
	}
	if r.output("findings-total") != "2" || !r.cond(r.a.Runs.Steps[2].If) {
		t.Errorf("findings-total %q; the upload step would not run", r.output("findings-total"))
	}
	validSARIF(t, r.output("sarif-file"), 2)
	cs := ourComments()
	if w := gh.writes(); len(cs) != 1 || len(w) != 1 || w[0] != "POST /repos/octo/app/issues/7/comments" {
		t.Fatalf("writes %v, comments %+v", w, cs)
	}
	id := cs[0].ID
	for _, s := range []string{"❌ cline-mcp review: 1 finding(s) at high or above", "`division by zero @octocat 'x' \\| <img src=x>`"} {
		if !strings.Contains(cs[0].Body, s) {
			t.Errorf("comment lacks %q:\n%s", s, cs[0].Body)
		}
	}

	r = newRunner(t, w, gh, with(answer(blockNone)))
	if failed := r.runAll(); failed || r.output("verdict") != "passed" {
		t.Fatalf("second push: failed %v, verdict %q\n%s", failed, r.output("verdict"), strings.Join(r.stepLogs, "\n"))
	}
	cs = ourComments()
	if w := gh.writes(); len(cs) != 1 || len(w) != 2 || w[1] != "PATCH /repos/octo/app/issues/comments/"+strconv.Itoa(id) {
		t.Fatalf("writes %v, comments %+v", w, cs)
	}
	if !strings.Contains(cs[0].Body, "✅ cline-mcp review: passed") {
		t.Errorf("comment not updated:\n%s", cs[0].Body)
	}

	r = newRunner(t, w, gh, with("fake:pong?text=Fine."))
	if failed := r.runAll(); !failed || r.output("verdict") != "no-verdict" || r.output("sarif-file") != "" || r.cond(r.a.Runs.Steps[2].If) {
		t.Fatalf("third push: failed %v, verdict %q, sarif %q\n%s", failed, r.output("verdict"), r.output("sarif-file"), strings.Join(r.stepLogs, "\n"))
	}
	if cs = ourComments(); len(cs) != 1 || !strings.Contains(cs[0].Body, "no verdict") || len(gh.writes()) != 3 {
		t.Errorf("writes %v, comments %+v", gh.writes(), cs)
	}

	bad := with(answer(blockNone))
	bad["binary-path"] = w.root + "/no-such-binary"
	r = newRunner(t, w, gh, bad)
	if failed := r.runAll(); !failed || r.output("verdict") != "no-verdict" || strings.Join(r.ran, ",") != "install,review,step3" {
		t.Fatalf("failed install: failed %v, verdict %q, ran %v\n%s", failed, r.output("verdict"), r.ran, strings.Join(r.stepLogs, "\n"))
	}
	if !strings.Contains(r.output("reason"), "binary") {
		t.Errorf("reason %q, want it to name the missing binary", r.output("reason"))
	}
	if cs = ourComments(); len(cs) != 1 || !strings.Contains(cs[0].Body, "no verdict") {
		t.Errorf("comments %+v", cs)
	}
	for _, c := range gh.all() {
		if c.User.Login == "mallory" && c.Body != marker+"\nnot the bot's" {
			t.Errorf("someone else's comment was changed: %q", c.Body)
		}
	}
	for _, l := range r.stepLogs {
		if strings.Contains(l, gh.token) {
			t.Errorf("the token is in a step's log")
		}
	}
}

// TestActionOutsidePullRequest: without a pull request number nothing is posted, and the
// gate's verdict is still the action's.
func TestActionOutsidePullRequest(t *testing.T) {
	needTools(t)
	b := binaries(t)
	w := newWorld(t)
	gh := newFakeGitHub(t, "octo/app", "ghs_faketoken123")
	r := newRunner(t, w, gh, map[string]string{"binary-path": b.ClineMCP, "isolation": "host", "args": fakeArgs(b),
		"prompt": answer(blockHighLow), "pr-number": "", "target": "base:main"})
	if failed := r.runAll(); !failed || r.output("verdict") != "findings" {
		t.Fatalf("failed %v, verdict %q\n%s", failed, r.output("verdict"), strings.Join(r.stepLogs, "\n"))
	}
	if len(gh.requests) != 0 {
		t.Errorf("requests to GitHub without a pull request: %+v", gh.requests)
	}
}
