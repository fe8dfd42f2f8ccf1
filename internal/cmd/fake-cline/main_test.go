package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeBin is the fake built once (static, CGO_ENABLED=0) for all tests.
var fakeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fake-cline-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "fake-cline")
	build := exec.Command("go", "build", "-o", fakeBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

type invocation struct {
	args  []string
	env   []string // added to a minimal environment
	stdin io.Reader
	dir   string
}

// baseEnv is a clean environment: no inherited CLINE_*/FAKE_CLINE_* variables.
func baseEnv(t *testing.T) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
}

func runFake(t *testing.T, inv invocation) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), fakeBin, inv.args...)
	cmd.Env = append(baseEnv(t), inv.env...)
	cmd.Dir = inv.dir
	cmd.Stdin = inv.stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run fake: %v", err)
		}
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

// workspace is a repo with README.md "hello\n" (a git repo) and a data dir seeded with
// providers.json from a recording.
type workspace struct {
	root, repo, data string
}

func newWorkspace(t *testing.T, providersFrom string) workspace {
	t.Helper()
	root := t.TempDir()
	w := workspace{root: root, repo: filepath.Join(root, "repo"), data: filepath.Join(root, "data")}
	mustMkdir(t, w.repo)
	writeFile(t, filepath.Join(w.repo, "README.md"), "hello\n")
	gitRun(t, w.repo, "init", "-q")
	gitRun(t, w.repo, "add", "-A")
	gitRun(t, w.repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "init")
	if providersFrom != "" {
		before := readFile(t, filepath.Join("testdata", "recordings", providersFrom, "providers.before.json"))
		writeFile(t, filepath.Join(w.data, "settings", "providers.json"), before)
	}
	return w
}

func (w workspace) args(extra ...string) []string {
	return append([]string{"--json", "-c", w.repo, "--data-dir", w.data}, extra...)
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// shape describes a JSON line without its values: a label built from type / event.type /
// contentType / hookEventName, and every key path in document order.
func shape(t *testing.T, line string) string {
	t.Helper()
	var head struct {
		Type          string `json:"type"`
		HookEventName string `json:"hookEventName"`
		Event         struct {
			Type        string `json:"type"`
			ContentType string `json:"contentType"`
		} `json:"event"`
	}
	if err := json.Unmarshal([]byte(line), &head); err != nil {
		t.Fatalf("not JSON: %q: %v", line, err)
	}
	label := strings.Join([]string{head.Type, head.HookEventName, head.Event.Type, head.Event.ContentType}, "/")
	dec := json.NewDecoder(strings.NewReader(line))
	var keys []string
	var walk func(prefix string)
	walk = func(prefix string) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("token: %v", err)
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				k, _ := dec.Token()
				keys = append(keys, prefix+k.(string))
				walk(prefix + k.(string) + ".")
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				walk(prefix + "[].")
			}
			_, _ = dec.Token()
		}
	}
	walk("")
	return label + " " + strings.Join(keys, ",")
}

func shapes(t *testing.T, stdout string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if l != "" {
			out = append(out, shape(t, l))
		}
	}
	return out
}

func recordedExit(t *testing.T, rec string) int {
	t.Helper()
	var code int
	for _, l := range strings.Split(readFile(t, filepath.Join("testdata", "recordings", rec, "exit.txt")), "\n") {
		if _, err := fmt.Sscanf(l, "exit_code=%d", &code); err == nil {
			return code
		}
	}
	t.Fatalf("no exit_code in %s", rec)
	return 0
}

var (
	tsRe     = regexp.MustCompile(`"ts":"[^"]*"`)
	volatile = regexp.MustCompile(`"(ts|agentId|taskId|toolCallId|executionId)":"[^"]*"|"durationMs":\d+`)
)

// normalize blanks the values that differ between any two runs (time, ids, durations).
func normalize(s string) string {
	return volatile.ReplaceAllStringFunc(s, func(m string) string {
		k, _, _ := strings.Cut(m, ":")
		return k + ":X"
	})
}

func TestShapesMatchRecordings(t *testing.T) {
	tests := []struct {
		rec         string
		prompt      string
		extra       []string
		disabled    bool
		checkStderr bool
	}{
		{"a_text_pong", "Reply with the word PONG", []string{"--auto-approve", "false"}, false, true},
		{"a_multiturn_text", "Say two lines fake:multiturn", []string{"--auto-approve", "false"}, false, true},
		{"g_thinking_high", "Reply fake:thinking", []string{"--auto-approve", "false", "--thinking", "high"}, false, true},
		{"b_edit_autoapprove_true", "Edit fake:edit?replace_path=README.md&new=hello%20world", []string{"--auto-approve", "true"}, false, true},
		{"b_edit_autoapprove_false", "Edit fake:edit?replace_path=README.md&new=hello%20world", []string{"--auto-approve", "false"}, false, true},
		{"b_run_commands_tool", "Run fake:run_commands", []string{"--auto-approve", "true"}, false, true},
		{"b_denied_tools_mistake_limit", "Create fake:tool_denied_abort", []string{"--auto-approve", "false"}, false, true},
		{"x_tools_disabled_readonly", "Read fake:try_mutate?read=README.md&path=hello.txt&touch=pwned&content=hi%0A", []string{"--auto-approve", "true"}, true, false},
		{"x_read_files_autoapprove_false", "Read fake:read", []string{"--auto-approve", "false"}, false, false},
		{"c_http_429", "Reply fake:http_429", []string{"--auto-approve", "false"}, false, true},
		{"d_http_500", "Reply fake:http_500", []string{"--auto-approve", "false"}, false, true},
		{"d_http_503", "Reply fake:http_503", []string{"--auto-approve", "false"}, false, true},
		{"e_http_401", "Reply fake:http_401", []string{"--auto-approve", "false"}, false, true},
		{"e_connection_refused", "Reply fake:conn_refused", []string{"--auto-approve", "false"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.rec, func(t *testing.T) {
			w := newWorkspace(t, "a_text_pong")
			if tt.disabled {
				writeFile(t, filepath.Join(w.data, "settings", "global-settings.json"), `{"disabledTools":["editor","run_commands"]}`)
			}
			r := runFake(t, invocation{args: w.args(append(tt.extra, tt.prompt)...)})
			recDir := filepath.Join("testdata", "recordings", tt.rec)
			got, want := shapes(t, r.stdout), shapes(t, readFile(t, filepath.Join(recDir, "stdout.jsonl")))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("stdout shapes differ\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			gotNorm := normalize(strings.ReplaceAll(r.stdout, w.repo, "<RUN:"+tt.rec+">/repo"))
			wantNorm := normalize(readFile(t, filepath.Join(recDir, "stdout.jsonl")))
			if gotNorm != wantNorm {
				t.Errorf("stdout values differ\ngot:\n%s\nwant:\n%s", gotNorm, wantNorm)
			}
			if want := recordedExit(t, tt.rec); r.code != want {
				t.Errorf("got exit %d, want %d", r.code, want)
			}
			if tt.checkStderr {
				gotErr := tsRe.ReplaceAllString(r.stderr, `"ts":"X"`)
				wantErr := tsRe.ReplaceAllString(readFile(t, filepath.Join(recDir, "stderr.txt")), `"ts":"X"`)
				if gotErr != wantErr {
					t.Errorf("stderr differs\ngot:\n%s\nwant:\n%s", gotErr, wantErr)
				}
			}
		})
	}
}

func TestToolsReallyAct(t *testing.T) {
	tests := []struct {
		name      string
		prompt    string
		approve   string
		disabled  bool
		wantFiles map[string]string // "" = must not exist
	}{
		{"edit approved", "Edit fake:edit?replace_path=README.md&new=hello%20world", "true", false,
			map[string]string{"hello.txt": "Hello from the fake model\n", "README.md": "hello world\n"}},
		{"edit denied", "Edit fake:edit?replace_path=README.md", "false", false,
			map[string]string{"hello.txt": "", "README.md": "hello\n"}},
		{"try_mutate approved", "Try fake:try_mutate", "true", false,
			map[string]string{"mutated.txt": "mutated by fake-cline\n", "touched.txt": "\x00exists"}},
		{"try_mutate disabled", "Try fake:try_mutate", "true", true,
			map[string]string{"mutated.txt": "", "touched.txt": ""}},
		{"try_mutate denied", "Try fake:try_mutate", "false", false,
			map[string]string{"mutated.txt": "", "touched.txt": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkspace(t, "a_text_pong")
			if tt.disabled {
				writeFile(t, filepath.Join(w.data, "settings", "global-settings.json"), `{"disabledTools":["editor","run_commands"]}`)
			}
			r := runFake(t, invocation{args: w.args("--auto-approve", tt.approve, tt.prompt)})
			if r.code != 0 || !strings.Contains(r.stdout, `"finishReason":"completed"`) {
				t.Fatalf("got exit %d, stdout %s", r.code, r.stdout)
			}
			for name, want := range tt.wantFiles {
				data, err := os.ReadFile(filepath.Join(w.repo, name))
				switch {
				case want == "" && err == nil:
					t.Errorf("%s exists, want absent", name)
				case want == "\x00exists" && err != nil:
					t.Errorf("%s: %v, want it to exist", name, err)
				case want != "" && want != "\x00exists" && string(data) != want:
					t.Errorf("%s: got %q, want %q", name, data, want)
				}
			}
		})
	}
}
