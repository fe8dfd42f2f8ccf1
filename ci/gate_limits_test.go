package ci

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGateDeadline: a review that never ends is stopped at the deadline (one run, no loop)
// and is a no-verdict; one that ignores SIGTERM is killed after the grace. The stopped
// process is gone when the gate returns.
func TestGateDeadline(t *testing.T) {
	needTools(t)
	for _, ignoreTerm := range []bool{false, true} {
		w := newWorld(t)
		pidFile := filepath.Join(w.root, "review.pid")
		body := "echo $$ >" + pidFile + "\nexec sleep 1000\n"
		if ignoreTerm {
			body = "trap '' TERM\n" + body // an ignored signal stays ignored across exec
		}
		hang := writeExecutable(t, filepath.Join(w.root, "hang"), body)
		r := runGate(t, w, map[string]string{"GATE_BINARY": hang, "GATE_DEADLINE": "1", "GATE_KILL_GRACE": "1"})
		r.want(t, w, "no-verdict", "0", 2)
		if !strings.Contains(r.out["reason"], "1s deadline") {
			t.Errorf("reason %q", r.out["reason"])
		}
		wantGone(t, pidFile)
	}
}

// TestGateInterrupted: a gate stopped by the CI system (SIGTERM) stops its review and reports
// no-verdict, not whatever the review's exit would have said.
func TestGateInterrupted(t *testing.T) {
	needTools(t)
	w := newWorld(t)
	pidFile := filepath.Join(w.root, "review.pid")
	hang := writeExecutable(t, filepath.Join(w.root, "hang"), "echo $$ >"+pidFile+".tmp\nmv "+pidFile+".tmp "+pidFile+"\nexec sleep 1000\n")
	out := filepath.Join(w.root, "github-output")
	cmd := exec.Command("bash", script(t, "ci/gate.sh"))
	cmd.Dir, cmd.Env = w.root, w.env(map[string]string{"GATE_BINARY": hang, "GATE_TARGET": "base:main", "GATE_OUT_DIR": w.out, "GITHUB_OUTPUT": out})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		if i == 6000 {
			_ = cmd.Process.Kill()
			t.Fatal("the review never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("exit %v, want 2", err)
	}
	if o := outputs(t, out); o["verdict"] != "no-verdict" || !strings.Contains(o["reason"], "interrupted") {
		t.Errorf("outputs %v", o)
	}
	wantGone(t, pidFile)
}

// wantGone fails when the process whose pid is in pidFile still runs (and kills it).
func wantGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the hanging review never ran: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
		_ = p.Kill()
		t.Errorf("the review (pid %d) still runs after the gate returned", pid)
	}
}

// TestGateAllowNoVerdict: the opt-in lets a no-verdict exit 0, loudly: the verdict stays
// no-verdict, the log and the summary say it is unsafe. It never excuses a configuration error.
func TestGateAllowNoVerdict(t *testing.T) {
	needTools(t)
	w := newWorld(t)
	r := runGate(t, w, map[string]string{"GATE_ALLOW_NO_VERDICT": "true", "GATE_PROMPT": "fake:pong?text=" + url.QueryEscape("No block.")})
	r.want(t, w, "no-verdict", "0", 0)
	if !strings.Contains(r.stderr, "UNSAFE") || !strings.Contains(r.summary, "`allow-no-verdict` is on") {
		t.Errorf("stderr:\n%s\nsummary:\n%s", r.stderr, r.summary)
	}
	// A finding is still a failure with the opt-in.
	r = runGate(t, w, map[string]string{"GATE_ALLOW_NO_VERDICT": "true", "GATE_PROMPT": answer(blockHighLow)})
	r.want(t, w, "findings", "1", 1)
}

// TestGateConfiguration: inputs are checked before anything runs; a bad one is a no-verdict
// that allow-no-verdict does not excuse. A service needs a token and https (or loopback).
func TestGateConfiguration(t *testing.T) {
	needTools(t)
	w := newWorld(t)
	marker := filepath.Join(w.root, "ran")
	stub := writeExecutable(t, filepath.Join(w.root, "stub"), "touch "+marker+"\nexit 0\n")
	cases := []struct {
		name, reason string
		vars         map[string]string
	}{
		{"service without token", "no token", map[string]string{"GATE_SERVICE_URL": "https://review.example.com/mcp", "GATE_ARGS": ""}},
		{"service over plain http", "must be https", map[string]string{"GATE_SERVICE_URL": "http://review.example.com/mcp", "GATE_SERVICE_TOKEN": "t", "GATE_ARGS": ""}},
		{"service with local flags", "args are", map[string]string{"GATE_SERVICE_URL": "https://review.example.com/mcp", "GATE_SERVICE_TOKEN": "t"}},
		{"no target", "no target", map[string]string{"GATE_TARGET": ""}},
		{"bad threshold", "fail-on must be", map[string]string{"GATE_FAIL_ON": "severe"}},
		{"bad timeout", "timeout must be", map[string]string{"GATE_TIMEOUT": "9999"}},
		{"bad isolation", "isolation must be", map[string]string{"GATE_ISOLATION": "vm"}},
		{"bad opt-in", "allow-no-verdict must be", map[string]string{"GATE_ALLOW_NO_VERDICT": "yes"}},
		{"no binary", "not there or not executable", map[string]string{"GATE_BINARY": filepath.Join(w.root, "missing")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vars := map[string]string{"GATE_BINARY": stub}
			if c.name != "bad opt-in" {
				vars["GATE_ALLOW_NO_VERDICT"] = "true"
			}
			for k, v := range c.vars {
				vars[k] = v
			}
			r := runGate(t, w, vars)
			r.want(t, w, "no-verdict", "0", 2)
			if !strings.Contains(r.out["reason"], c.reason) {
				t.Errorf("reason %q, want %q", r.out["reason"], c.reason)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the review ran despite the bad configuration")
			}
		})
	}
}

// validSARIF checks the log at path the way a SARIF consumer would (GitHub's upload-sarif
// rejects a log without these): version 2.1.0, one run with a named tool driver, rules with
// ids, and results with a known rule, a SARIF level, a message and relative locations.
func validSARIF(t *testing.T, path string, results int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the SARIF file the upload step would send: %v", err)
	}
	var log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID  string `json:"ruleId"`
				Level   string `json:"level"`
				Message struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region *struct {
							StartLine int `json:"startLine"`
							EndLine   int `json:"endLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &log); err != nil {
		t.Fatalf("SARIF is not JSON: %v\n%s", err, b)
	}
	if log.Version != "2.1.0" || !strings.Contains(log.Schema, "sarif-2.1.0") || len(log.Runs) != 1 {
		t.Fatalf("not a SARIF 2.1.0 log of one run:\n%s", b)
	}
	run := log.Runs[0]
	rules := map[string]bool{}
	for _, r := range run.Tool.Driver.Rules {
		rules[r.ID] = r.ID != ""
	}
	if run.Tool.Driver.Name == "" || len(rules) == 0 {
		t.Errorf("tool driver %+v", run.Tool.Driver)
	}
	if len(run.Results) != results {
		t.Errorf("%d results, want %d", len(run.Results), results)
	}
	for i, r := range run.Results {
		levelOK := r.Level == "error" || r.Level == "warning" || r.Level == "note" || r.Level == "none"
		if !rules[r.RuleID] || !levelOK || r.Message.Text == "" {
			t.Errorf("result %d: rule %q, level %q, message %q", i, r.RuleID, r.Level, r.Message.Text)
		}
		for _, l := range r.Locations {
			u, err := url.Parse(l.PhysicalLocation.ArtifactLocation.URI)
			if err != nil || u.IsAbs() || u.Host != "" || strings.HasPrefix(u.Path, "/") || u.Path == "" {
				t.Errorf("result %d: location %q is not a relative reference", i, l.PhysicalLocation.ArtifactLocation.URI)
			}
			if g := l.PhysicalLocation.Region; g != nil && (g.StartLine < 1 || g.EndLine < g.StartLine) {
				t.Errorf("result %d: region %+v", i, *g)
			}
		}
	}
}
