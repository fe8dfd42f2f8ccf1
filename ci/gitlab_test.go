package ci

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// component is templates/review.yml: the spec document and the job document.
type component struct {
	Spec struct {
		Inputs map[string]struct {
			Description string   `yaml:"description"`
			Default     any      `yaml:"default"`
			Type        string   `yaml:"type"`
			Options     []string `yaml:"options"`
		} `yaml:"inputs"`
	} `yaml:"spec"`
	Jobs map[string]gitlabJob
}

type gitlabJob struct {
	Stage     string            `yaml:"stage"`
	Image     string            `yaml:"image"`
	Services  []string          `yaml:"services"`
	Rules     []map[string]any  `yaml:"rules"`
	Variables map[string]string `yaml:"variables"`
	Script    []string          `yaml:"script"`
	Artifacts struct {
		When     string            `yaml:"when"`
		ExposeAs string            `yaml:"expose_as"`
		Paths    []string          `yaml:"paths"`
		Reports  map[string]string `yaml:"reports"`
	} `yaml:"artifacts"`
}

var inputRe = regexp.MustCompile(`\$\[\[\s*inputs\.([a-z0-9_-]+)\s*\]\]`)

func loadComponent(t *testing.T) (component, string) {
	t.Helper()
	b, err := os.ReadFile(script(t, "templates/review.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c component
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("templates/review.yml, spec document: %v", err)
	}
	if err := dec.Decode(&c.Jobs); err != nil {
		t.Fatalf("templates/review.yml, job document: %v", err)
	}
	var extra any
	if err := dec.Decode(&extra); err == nil {
		t.Fatalf("templates/review.yml has more than two documents")
	}
	return c, string(b)
}

// TestGitLabComponentYAML: templates/review.yml is a CI/CD catalog component: a spec document
// with described, typed inputs, then one merge-request job whose inputs reach the gate only
// through variables (not spliced into the script), with its reports kept even on failure.
func TestGitLabComponentYAML(t *testing.T) {
	c, text := loadComponent(t)
	want := []string{"allow-no-verdict", "args", "deadline", "fail-on", "focus", "image", "isolation", "prompt",
		"release-url", "service-cwd", "service-url", "stage", "target", "timeout", "version"}
	var got []string
	for name, in := range c.Spec.Inputs {
		got = append(got, name)
		if in.Description == "" || in.Default == nil {
			t.Errorf("input %s: no description or no default", name)
		}
		if in.Type != "" && in.Type != "string" && in.Type != "number" && in.Type != "boolean" {
			t.Errorf("input %s: type %q", name, in.Type)
		}
		if !strings.Contains(text, "$[[ inputs."+name+" ]]") {
			t.Errorf("input %s is never used", name)
		}
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("inputs %v, want %v", got, want)
	}
	if d := c.Spec.Inputs["allow-no-verdict"]; d.Type != "boolean" || d.Default != false || !strings.Contains(d.Description, "UNSAFE") {
		t.Errorf("allow-no-verdict %+v", d)
	}
	job, ok := c.Jobs["cline-mcp-review"]
	if !ok || len(c.Jobs) != 1 {
		t.Fatalf("jobs %v, want cline-mcp-review", c.Jobs)
	}
	for _, m := range inputRe.FindAllStringSubmatch(text, -1) {
		if _, ok := c.Spec.Inputs[m[1]]; !ok {
			t.Errorf("$[[ inputs.%s ]] is not declared", m[1])
		}
	}
	for _, line := range job.Script {
		if strings.Contains(line, "$[[") {
			t.Errorf("an input is spliced into the script: %q", line)
		}
	}
	if job.Artifacts.When != "always" || job.Artifacts.Reports["dotenv"] != "cline-review/review.env" ||
		job.Artifacts.Reports["codequality"] != "cline-review/codequality.json" || job.Variables["GATE_DOTENV"] != "cline-review/review.env" {
		t.Errorf("artifacts %+v", job.Artifacts)
	}
	if len(job.Rules) == 0 || job.Variables["GIT_DEPTH"] != "0" || !strings.Contains(job.Variables["GATE_TARGET"], "inputs.target") {
		t.Errorf("rules %v, variables %v", job.Rules, job.Variables)
	}
}

// runComponent runs the component's job script with POSIX sh as a runner would: inputs
// interpolated (defaults, or the test's), variables expanded against the pipeline's, in a
// checkout of the merge request. It returns the exit code, the log and the dotenv report.
func runComponent(t *testing.T, w *world, inputs map[string]string) (int, string, string) {
	t.Helper()
	c, _ := loadComponent(t)
	job := c.Jobs["cline-mcp-review"]
	for name := range inputs {
		if _, ok := c.Spec.Inputs[name]; !ok {
			t.Fatalf("%s is not an input of the component", name)
		}
	}
	interpolate := func(s string) string {
		return inputRe.ReplaceAllStringFunc(s, func(m string) string {
			name := inputRe.FindStringSubmatch(m)[1]
			if v, ok := inputs[name]; ok {
				return v
			}
			return fmt.Sprint(c.Spec.Inputs[name].Default)
		})
	}
	pipeline := map[string]string{"CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
		"CI_MERGE_REQUEST_DIFF_BASE_SHA": w.base, "CI_PROJECT_DIR": w.work}
	env := map[string]string{}
	for k, v := range pipeline {
		env[k] = v
	}
	for k, v := range job.Variables {
		env[k] = os.Expand(interpolate(v), func(name string) string { return pipeline[name] })
	}
	cmd := exec.Command("sh", "-c", strings.Join(job.Script, "\n"))
	cmd.Dir, cmd.Env = w.work, w.env(env)
	code, stdout, stderr := run(t, cmd, 3*time.Minute)
	dotenv, _ := os.ReadFile(filepath.Join(w.work, job.Variables["GATE_DOTENV"]))
	return code, stdout + stderr, string(dotenv)
}

// TestGitLabComponentJob runs the component's job against a loopback release page: it
// installs the checksum-verified archive, runs the gate from inside it on the merge request's
// diff base, and leaves the verdict in the dotenv report and the findings in the Code Quality
// report; findings fail the job, passed passes, and a tampered archive never runs: the job
// fails with no-verdict.
func TestGitLabComponentJob(t *testing.T) {
	needTools(t, "sh", "sha256sum", "awk")
	b := binaries(t)
	rel := newFakeRelease(t, "v9.9.9", false)
	inputs := func(prompt string) map[string]string {
		return map[string]string{"version": "v9.9.9", "release-url": rel.srv.URL, "isolation": "host", "args": fakeArgs(b), "prompt": prompt}
	}
	w := newWorld(t)
	code, log, dotenv := runComponent(t, w, inputs(answer(blockHighLow)))
	if code == 0 || !strings.Contains(dotenv, "CLINE_REVIEW_VERDICT=findings\n") || !strings.Contains(dotenv, "CLINE_REVIEW_FINDINGS=1\n") {
		t.Fatalf("exit %d, dotenv %q\n%s", code, dotenv, log)
	}
	if !strings.Contains(log, "--target base:"+w.base) {
		t.Errorf("the review did not target the diff base %s:\n%s", w.base, log)
	}
	if _, err := os.Stat(filepath.Join(w.work, "cline-review", "codequality.json")); err != nil {
		t.Errorf("no Code Quality report: %v", err)
	}
	validSARIF(t, filepath.Join(w.work, "cline-review", "review.sarif"), 2)

	code, log, dotenv = runComponent(t, w, inputs(answer(blockNone)))
	if code != 0 || !strings.Contains(dotenv, "CLINE_REVIEW_VERDICT=passed\n") {
		t.Fatalf("exit %d, dotenv %q\n%s", code, dotenv, log)
	}

	tampered := newFakeRelease(t, "v9.9.9", true)
	in := inputs(answer(blockNone))
	in["release-url"] = tampered.srv.URL
	code, log, dotenv = runComponent(t, w, in)
	if code == 0 || !strings.Contains(dotenv, "CLINE_REVIEW_VERDICT=no-verdict\n") || !strings.Contains(log, "does not match checksums.txt") {
		t.Fatalf("tampered archive: exit %d, dotenv %q\n%s", code, dotenv, log)
	}
	if strings.Contains(log, "cline-mcp gate:") {
		t.Errorf("the gate ran from a tampered archive:\n%s", log)
	}
}
