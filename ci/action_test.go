package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// action is the part of action.yml a runner reads.
type action struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Author      string            `yaml:"author"`
	Branding    map[string]string `yaml:"branding"`
	Inputs      map[string]struct {
		Description string `yaml:"description"`
		Default     string `yaml:"default"`
		Required    bool   `yaml:"required"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Shell string            `yaml:"shell"`
	Run   string            `yaml:"run"`
	Uses  string            `yaml:"uses"`
	Env   map[string]string `yaml:"env"`
	With  map[string]string `yaml:"with"`
}

func loadAction(t *testing.T) action {
	t.Helper()
	b, err := os.ReadFile(script(t, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a action
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

var exprRe = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// TestActionYAML: action.yml is a composite action with the documented inputs and outputs;
// its scripts take inputs only through env (no expression inside a run: no script injection),
// every input is used, and the SARIF step is the official upload action fed the gate's file.
func TestActionYAML(t *testing.T) {
	a := loadAction(t)
	if a.Runs.Using != "composite" || a.Name == "" || a.Description == "" {
		t.Fatalf("runs.using %q, name %q", a.Runs.Using, a.Name)
	}
	for _, in := range []string{"version", "binary-path", "release-url", "target", "fail-on", "timeout", "deadline", "isolation",
		"args", "focus", "prompt", "allow-no-verdict", "service-url", "service-token", "service-cwd", "comment", "upload-sarif", "github-token", "pr-number"} {
		if d, ok := a.Inputs[in]; !ok || d.Description == "" {
			t.Errorf("input %s missing or undescribed", in)
		}
	}
	if !strings.Contains(a.Inputs["allow-no-verdict"].Description, "UNSAFE") || a.Inputs["allow-no-verdict"].Default != "false" {
		t.Errorf("allow-no-verdict: %+v", a.Inputs["allow-no-verdict"])
	}
	if a.Inputs["service-url"].Default != "" || a.Inputs["service-token"].Default != "" {
		t.Errorf("service-url %+v, service-token %+v: empty by default (a review in the job)", a.Inputs["service-url"], a.Inputs["service-token"])
	}
	for _, out := range []string{"verdict", "findings", "sarif-file"} {
		if o := a.Outputs[out]; o.Value != "${{ steps.review.outputs."+out+" }}" {
			t.Errorf("output %s = %q", out, o.Value)
		}
	}
	all := ""
	var upload *actionStep
	for i, s := range a.Runs.Steps {
		if s.Run != "" {
			if s.Shell != "bash" || exprRe.MatchString(s.Run) {
				t.Errorf("step %d: shell %q, run %q: bash, and inputs through env only", i, s.Shell, s.Run)
			}
			m := regexp.MustCompile(`"\$GITHUB_ACTION_PATH/(ci/[a-z]+\.sh)"`).FindStringSubmatch(s.Run)
			if m == nil {
				t.Errorf("step %d runs %q, not a script of the action", i, s.Run)
			} else if _, err := os.Stat(script(t, m[1])); err != nil {
				t.Errorf("step %d: %v", i, err)
			}
		}
		if strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@") {
			upload = &a.Runs.Steps[i]
		}
		all += s.If + "\n"
		for _, v := range s.Env {
			all += v + "\n"
		}
		for _, v := range s.With {
			all += v + "\n"
		}
	}
	if upload == nil || upload.With["sarif_file"] != "${{ steps.review.outputs.sarif-file }}" || !strings.Contains(upload.If, "steps.review.outputs.sarif-file != ''") {
		t.Errorf("no upload-sarif step of the gate's SARIF file: %+v", upload)
	}
	for name := range a.Inputs {
		if !strings.Contains(all, "inputs."+name+" ") && !strings.Contains(all, "inputs."+name+"\n") && !strings.Contains(all, "inputs."+name+" }}") {
			t.Errorf("input %s is never used", name)
		}
	}
}

// runner runs the action's script steps as GitHub's runner does: in order, `bash
// --noprofile --norc -eo pipefail`, env from expressions, a fresh GITHUB_OUTPUT per step, and
// a failed step skipping later steps unless their `if` says otherwise. The expressions it
// knows are the ones action.yml uses; any other fails the test.
type runner struct {
	t        *testing.T
	w        *world
	a        action
	ctx      map[string]string // expression -> value
	failed   bool
	ran      []string
	summary  string
	baseEnv  map[string]string
	stepLogs []string
}

func newRunner(t *testing.T, w *world, gh *fakeGitHub, with map[string]string) *runner {
	a := loadAction(t)
	temp := filepath.Join(w.root, "runner-temp")
	if err := os.MkdirAll(temp, 0o700); err != nil {
		t.Fatal(err)
	}
	r := &runner{t: t, w: w, a: a, ctx: map[string]string{
		"github.base_ref": "main", "github.token": gh.token, "github.event.pull_request.number": "7",
		"runner.temp": temp,
	}, baseEnv: map[string]string{
		"GITHUB_ACTION_PATH": script(t, "."), "GITHUB_API_URL": gh.srv.URL, "GITHUB_REPOSITORY": gh.repo,
		"GITHUB_STEP_SUMMARY": filepath.Join(w.root, "step-summary.md"), "RUNNER_TEMP": temp, "CI": "true",
	}}
	for name, in := range a.Inputs {
		v, ok := with[name]
		if !ok {
			v = r.eval(in.Default)
		}
		r.ctx["inputs."+name] = v
	}
	for name := range with {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("with: %s is not an input of the action", name)
		}
	}
	return r
}

// eval replaces every ${{ expr }} of s by its value.
func (r *runner) eval(s string) string {
	return exprRe.ReplaceAllStringFunc(s, func(m string) string {
		key := exprRe.FindStringSubmatch(m)[1]
		v, ok := r.ctx[key]
		if !ok && strings.HasPrefix(key, "steps.") {
			return "" // an output a step did not set
		}
		if !ok {
			r.t.Fatalf("action.yml uses the expression %q, which this runner does not know", key)
		}
		return v
	})
}

// cond evaluates a step's if: "" or terms joined by &&, each !cancelled(), `a == 'v'` or
// `a != 'v'`. No if means success(): skipped after a failure.
func (r *runner) cond(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return !r.failed
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "${{"), "}}")
	for _, term := range strings.Split(s, "&&") {
		term = strings.TrimSpace(term)
		switch {
		case term == "!cancelled()":
		case strings.Contains(term, "=="), strings.Contains(term, "!="):
			op := "=="
			if strings.Contains(term, "!=") {
				op = "!="
			}
			lhs, rhs, _ := strings.Cut(term, op)
			lhs, rhs = strings.TrimSpace(lhs), strings.Trim(strings.TrimSpace(rhs), "'")
			v := r.eval("${{ " + lhs + " }}")
			if (v == rhs) != (op == "==") {
				return false
			}
		default:
			r.t.Fatalf("if: %q: this runner does not know %q", s, term)
		}
	}
	return true
}

// runAll runs the action once; it returns whether the action failed.
func (r *runner) runAll() bool {
	for i, s := range r.a.Runs.Steps {
		if !r.cond(s.If) || s.Run == "" {
			continue // a `uses` step (the SARIF upload) is GitHub's, not run here
		}
		outFile := filepath.Join(r.w.root, "step-output")
		_ = os.Remove(outFile)
		env := map[string]string{"GITHUB_OUTPUT": outFile}
		for k, v := range r.baseEnv {
			env[k] = v
		}
		for k, v := range s.Env {
			env[k] = r.eval(v)
		}
		file := filepath.Join(r.w.root, "step.sh")
		if err := os.WriteFile(file, []byte(s.Run), 0o600); err != nil {
			r.t.Fatal(err)
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", file)
		cmd.Dir, cmd.Env = r.w.work, r.w.env(env)
		code, stdout, stderr := run(r.t, cmd, 3*time.Minute)
		r.stepLogs = append(r.stepLogs, "step "+s.ID+":\n"+stdout+stderr)
		r.ran = append(r.ran, firstWord(s.ID, i))
		if s.ID != "" {
			for k, v := range outputs(r.t, outFile) {
				r.ctx["steps."+s.ID+".outputs."+k] = v
			}
		}
		if code != 0 {
			r.failed = true
		}
	}
	return r.failed
}

func firstWord(id string, i int) string {
	if id != "" {
		return id
	}
	return "step" + string(rune('0'+i))
}

// output is one of the action's outputs after runAll.
func (r *runner) output(name string) string { return r.eval(r.a.Outputs[name].Value) }
