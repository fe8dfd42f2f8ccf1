package e2e

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReviewGateFailsClosed: with --fail-on, an answer without a findings block that parses is no
// verdict (exit 3 and a message), never a pass; the SARIF says so in invocations'
// executionSuccessful. Without --fail-on the command only reports (exit 0). A parsed answer
// without findings passes (exit 0) with executionSuccessful true: the marker that the gate can pass.
func TestReviewGateFailsClosed(t *testing.T) {
	e := prepareEnv(t)
	dirtyCheckout(t, e.work)
	run := func(extra ...string) (int, string) {
		argv, environ := e.server(nil)
		cmd := exec.Command(bins.ClineMCP, append(append([]string{"review"}, argv...), extra...)...)
		cmd.Env, cmd.Dir = environ, e.work
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), errb.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, errb.String()
	}
	successful := func(path string) any {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var log struct {
			Runs []struct {
				Invocations []map[string]any
			}
		}
		if err := json.Unmarshal(b, &log); err != nil || len(log.Runs) != 1 || len(log.Runs[0].Invocations) != 1 {
			t.Fatalf("SARIF without one run and one invocation: %v\n%s", err, b)
		}
		return log.Runs[0].Invocations[0]["executionSuccessful"]
	}
	sarif := filepath.Join(e.root, "review.sarif")
	clean := reviewAnswer(`{"summary": "fine", "findings": []}`)
	if code, stderr := run("--prompt", clean, "--format", "sarif", "--out", sarif, "--fail-on", "high"); code != 0 || successful(sarif) != true {
		t.Fatalf("a parsed answer without findings: exit %d, executionSuccessful %v\n%s", code, successful(sarif), stderr)
	}
	prose := "fake:pong?text=" + url.QueryEscape("Looks fine to me, no JSON here.")
	code, stderr := run("--prompt", prose, "--format", "sarif", "--out", sarif, "--fail-on", "high")
	if code != 3 || !strings.Contains(stderr, "no verdict") {
		t.Errorf("an answer without a findings block and --fail-on high: exit %d, want 3 naming no verdict\n%s", code, stderr)
	}
	if s := successful(sarif); s != false {
		t.Errorf("SARIF of an unparsed answer: executionSuccessful %v, want false", s)
	}
	if code, stderr := run("--prompt", prose, "--format", "json"); code != 0 {
		t.Errorf("without --fail-on the command only reports: exit %d\n%s", code, stderr)
	}
}
