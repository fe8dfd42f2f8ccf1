package ci

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gateResult is what one run of gate.sh left: its exit code, outputs, summary and stderr.
type gateResult struct {
	code    int
	out     map[string]string
	summary string
	stderr  string
}

// runGate runs gate.sh in w with the real cline-mcp on the fake CLI (host isolation), the
// defaults below overridden by vars ("" removes a variable).
func runGate(t *testing.T, w *world, vars map[string]string) gateResult {
	t.Helper()
	b := binaries(t)
	env := map[string]string{
		"GATE_BINARY": b.ClineMCP, "GATE_CWD": w.work, "GATE_TARGET": "base:main", "GATE_ISOLATION": "host",
		"GATE_TIMEOUT": "60", "GATE_ARGS": fakeArgs(b), "GATE_OUT_DIR": w.out,
		"GITHUB_OUTPUT": filepath.Join(w.root, "github-output"), "GATE_DOTENV": filepath.Join(w.root, "review.env"),
	}
	_ = os.Remove(env["GITHUB_OUTPUT"])
	for k, v := range vars {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	cmd := exec.Command("bash", script(t, "ci/gate.sh"))
	cmd.Dir, cmd.Env = w.root, w.env(env)
	code, _, stderr := run(t, cmd, 3*time.Minute)
	summary, _ := os.ReadFile(filepath.Join(w.out, "summary.md"))
	return gateResult{code: code, out: outputs(t, env["GITHUB_OUTPUT"]), summary: string(summary), stderr: stderr}
}

// want checks the verdict, the finding counts and the exit code, and that the dotenv holds the
// same verdict as the GitHub outputs.
func (r gateResult) want(t *testing.T, w *world, verdict, findings string, code int) {
	t.Helper()
	if r.out["verdict"] != verdict || r.code != code || (findings != "" && r.out["findings"] != findings) {
		t.Fatalf("verdict %q, findings %q, exit %d; want %q, %q, exit %d\noutputs %v\nsummary:\n%s\nstderr:\n%s",
			r.out["verdict"], r.out["findings"], r.code, verdict, findings, code, r.out, r.summary, r.stderr)
	}
	env, err := os.ReadFile(filepath.Join(w.root, "review.env"))
	if err != nil || !strings.Contains(string(env), "CLINE_REVIEW_VERDICT="+verdict+"\n") {
		t.Errorf("dotenv %q (%v), want the verdict %s", env, err, verdict)
	}
	if r.out["summary-file"] == "" || r.summary == "" {
		t.Errorf("no summary: outputs %v", r.out)
	}
}

const (
	blockNone    = `{"summary": "fine", "findings": []}`
	blockHighLow = `{"summary": "one bug", "findings": [` +
		`{"severity": "high", "file": "app.go", "line": 5, "title": "division by zero @octocat ` + "`x`" + ` | <img src=x>", "detail": "a / 0 panics"},` +
		`{"severity": "low", "file": "README.md", "line": 1, "title": "old readme", "detail": "not part of the change"}]}`
	blockMediumLow = `{"summary": "nits", "findings": [` +
		`{"severity": "medium", "file": "app.go", "line": 4, "title": "naming", "detail": "a is a poor name"},` +
		`{"severity": "low", "file": "app.go", "line": 6, "title": "blank", "detail": "_ = b"}]}`
)

// TestGateVerdicts: a review that ran to an answer is passed or findings by the threshold,
// counted from the SARIF log, and the exit code is 0 only for passed.
func TestGateVerdicts(t *testing.T) {
	needTools(t)
	t.Run("passed", func(t *testing.T) {
		w := newWorld(t)
		r := runGate(t, w, map[string]string{"GATE_PROMPT": answer(blockNone)})
		r.want(t, w, "passed", "0", 0)
		if r.out["findings-total"] != "0" || !strings.Contains(r.summary, "No findings.") {
			t.Errorf("outputs %v, summary:\n%s", r.out, r.summary)
		}
		validSARIF(t, r.out["sarif-file"], 0)
	})
	t.Run("findings above the threshold", func(t *testing.T) {
		w := newWorld(t)
		r := runGate(t, w, map[string]string{"GATE_PROMPT": answer(blockHighLow), "GATE_FAIL_ON": "high"})
		r.want(t, w, "findings", "1", 1)
		if r.out["findings-total"] != "2" {
			t.Errorf("findings-total %q, want 2", r.out["findings-total"])
		}
		validSARIF(t, r.out["sarif-file"], 2)
		// What Cline wrote reaches the summary (and the PR comment) only inside code spans:
		// no mention, image or HTML; the backquotes are gone and the pipe is escaped.
		for _, s := range []string{"| `high` | `app.go:5` | `division by zero @octocat 'x' \\| <img src=x>` |", "| `low` | `README.md:1` (outside the change) | `old readme` |"} {
			if !strings.Contains(r.summary, s) {
				t.Errorf("summary lacks %q:\n%s", s, r.summary)
			}
		}
		var cq []struct {
			Severity string
			Location struct {
				Path  string
				Lines struct{ Begin int }
			}
		}
		b, _ := os.ReadFile(r.out["codequality-file"])
		if err := json.Unmarshal(b, &cq); err != nil || len(cq) != 2 || cq[0].Severity != "critical" || cq[0].Location.Path != "app.go" || cq[0].Location.Lines.Begin != 5 {
			t.Errorf("code quality report %s (%v)", b, err)
		}
	})
	t.Run("findings below the threshold", func(t *testing.T) {
		w := newWorld(t)
		r := runGate(t, w, map[string]string{"GATE_PROMPT": answer(blockMediumLow), "GATE_FAIL_ON": "high"})
		r.want(t, w, "passed", "0", 0)
		if r.out["findings-total"] != "2" || !strings.Contains(r.summary, "`naming`") {
			t.Errorf("outputs %v, summary:\n%s", r.out, r.summary)
		}
		r = runGate(t, w, map[string]string{"GATE_PROMPT": answer(blockMediumLow), "GATE_FAIL_ON": "low"})
		r.want(t, w, "findings", "2", 1)
	})
}

// TestGateNoVerdict: every way a review can end without a verdict is no-verdict and fails the
// job: the review cannot start, times out, answers without a findings block, or what ran wrote
// no log, garbage, or a log its exit code contradicts; a log an earlier run left never counts.
func TestGateNoVerdict(t *testing.T) {
	needTools(t)
	w := newWorld(t)
	stub := func(name, body string) string {
		return writeExecutable(t, filepath.Join(w.root, name), `out=
while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift ;; esac; shift; done
echo ran >"`+filepath.Join(w.root, name+".ran")+`"
`+body)
	}
	highLog := sarifLog(`[{"ruleId": "review/high", "level": "error", "message": {"text": "t"}, "properties": {"severity": "high"}}]`, true)
	cases := []struct {
		name, reason string
		vars         map[string]string
		ran          string // a stub that must have run (its marker), so "nothing ran" cannot pass
		kind         string // what cline-mcp said on stderr
	}{
		{name: "cline cannot start", reason: "exit 3", kind: "cline-mcp review: launch_failed",
			vars: map[string]string{"GATE_ARGS": "--cline\n" + filepath.Join(w.root, "no-such-cline"), "GATE_PROMPT": answer(blockNone)}},
		{name: "review times out", reason: "exit 3", kind: "cline-mcp review: timeout",
			vars: map[string]string{"GATE_PROMPT": "fake:hang", "GATE_TIMEOUT": "2"}},
		{name: "answer without findings block", reason: "no readable findings block",
			vars: map[string]string{"GATE_PROMPT": "fake:pong?text=" + "Looks%20fine%20to%20me."}},
		{name: "non-JSON output of the CLI", reason: "exit 3", kind: "cline-mcp review: malformed_json",
			vars: map[string]string{"GATE_PROMPT": "fake:garbage"}},
		{name: "bad flag", reason: "exit 2",
			vars: map[string]string{"GATE_ARGS": "--no-such-flag", "GATE_PROMPT": answer(blockNone)}},
		{name: "garbage log", reason: "not valid JSON", ran: "garbage",
			vars: map[string]string{"GATE_BINARY": stub("garbage", `echo '{"version": "2.1.0", "runs": [' >"$out"; exit 0`)}},
		{name: "exit 0 without a log", reason: "wrote no SARIF log", ran: "nolog",
			vars: map[string]string{"GATE_BINARY": stub("nolog", "exit 0")}},
		{name: "exit 0 with a finding at the threshold", reason: "exited 0 but its SARIF log holds 1 finding", ran: "liar",
			vars: map[string]string{"GATE_BINARY": stub("liar", "cat >\"$out\" <<'EOF'\n"+highLog+"\nEOF\nexit 0")}},
		{name: "killed", reason: "exit code 137", ran: "killed",
			vars: map[string]string{"GATE_BINARY": stub("killed", `kill -KILL $$`)}},
		{name: "unsuccessful invocation", reason: "unsuccessful invocation", ran: "invocation",
			vars: map[string]string{"GATE_BINARY": stub("invocation", "cat >\"$out\" <<'EOF'\n"+
				strings.Replace(sarifLog(`[]`, true), `"results"`, `"invocations": [{"executionSuccessful": false}], "results"`, 1)+"\nEOF\nexit 0")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A passing log from an earlier run sits where this run writes: it must not count.
			if err := os.MkdirAll(w.out, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(w.out, "review.sarif"), []byte(sarifLog(`[]`, true)), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runGate(t, w, c.vars)
			r.want(t, w, "no-verdict", "0", 2)
			if !strings.Contains(r.out["reason"], c.reason) {
				t.Errorf("reason %q, want it to say %q\nstderr:\n%s", r.out["reason"], c.reason, r.stderr)
			}
			if r.out["sarif-file"] != "" || !strings.Contains(r.summary, "no verdict") || !strings.Contains(r.summary, "This is not a pass") {
				t.Errorf("outputs %v, summary:\n%s", r.out, r.summary)
			}
			if !strings.Contains(r.stderr, c.kind) {
				t.Errorf("stderr lacks %q:\n%s", c.kind, r.stderr)
			}
			if c.ran != "" {
				if _, err := os.Stat(filepath.Join(w.root, c.ran+".ran")); err != nil {
					t.Errorf("the stand-in %s never ran: %v", c.ran, err)
				}
			}
		})
	}
}

// sarifLog is a SARIF log as cline-mcp writes it, with these results.
func sarifLog(results string, parsed bool) string {
	p := "false"
	if parsed {
		p = "true"
	}
	return `{"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [{` +
		`"tool": {"driver": {"name": "cline-mcp review_cline", "rules": []}}, "results": ` + results +
		`, "properties": {"findingsParsed": ` + p + `}}]}`
}
