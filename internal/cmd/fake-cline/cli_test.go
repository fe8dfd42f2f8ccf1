package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageErrorsMatchRecordings(t *testing.T) {
	tests := []struct {
		rec   string
		args  func(w workspace) []string
		stdin string // "" = /dev/null
	}{
		{"u_single_word_prompt", func(w workspace) []string { return w.args("--auto-approve", "false", "PONG") }, ""},
		{"u_two_positional_args", func(w workspace) []string { return w.args("--auto-approve", "false", "Reply", "PONG") }, ""},
		{"u_unknown_flag", func(w workspace) []string { return w.args("--bogus-flag", "Reply with the word PONG") }, ""},
		{"u_invalid_auto_approve", func(w workspace) []string { return w.args("--auto-approve", "maybe", "Reply with the word PONG") }, ""},
		{"u_invalid_thinking", func(w workspace) []string { return w.args("--thinking", "extreme", "Reply with the word PONG") }, ""},
		{"u_invalid_timeout", func(w workspace) []string { return w.args("-t", "0", "Reply with the word PONG") }, ""},
		{"u_json_without_prompt", func(w workspace) []string { return w.args("--auto-approve", "false") }, ""},
		{"u_json_without_prompt", func(w workspace) []string { return w.args("--id", "sess_x", "Reply with the word PONG") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.rec, func(t *testing.T) {
			w := newWorkspace(t, "")
			r := runFake(t, invocation{args: tt.args(w)})
			want := tsRe.ReplaceAllString(readFile(t, filepath.Join("testdata", "recordings", tt.rec, "stderr.txt")), `"ts":"X"`)
			if got := tsRe.ReplaceAllString(r.stderr, `"ts":"X"`); got != want {
				t.Errorf("stderr\ngot:  %q\nwant: %q", got, want)
			}
			if r.code != 1 || r.stdout != "" {
				t.Errorf("got exit %d stdout %q, want exit 1 and empty stdout", r.code, r.stdout)
			}
			if _, err := os.Stat(filepath.Join(w.data, "settings", "providers.json")); err == nil {
				t.Errorf("providers.json written by a usage error")
			}
		})
	}
}

func TestArgumentEdgeCases(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
		wantStdout string
	}{
		{"leading dash prompt is an unknown option", []string{"--json", "-x do it"}, 1, "\x1b[31merror:\x1b[0m error: unknown option '-x do it'\n", ""},
		{"version", []string{"version"}, 0, "", "3.0.65\n"},
		{"-V", []string{"-V"}, 0, "", "3.0.65\n"},
		{"option missing value", []string{"--json", "-c"}, 1, "\x1b[31merror:\x1b[0m error: option '-c' argument missing\n", ""},
		{"unknown subcommand word is not a prompt", []string{"--json", "history"}, 1, "\x1b[31merror:\x1b[0m fake-cline: command \"history\" is not implemented\n", ""},
		{"unknown scenario", []string{"--json", "Reply fake:nope"}, 2, "\x1b[31merror:\x1b[0m fake-cline: unknown scenario \"nope\" (see fake-cline --list-scenarios)\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runFake(t, invocation{args: tt.args, dir: t.TempDir()})
			if r.code != tt.wantCode || r.stderr != tt.wantStderr || r.stdout != tt.wantStdout {
				t.Errorf("got (%d, %q, %q), want (%d, %q, %q)", r.code, r.stderr, r.stdout, tt.wantCode, tt.wantStderr, tt.wantStdout)
			}
		})
	}
	t.Run("double dash allows a leading-dash prompt", func(t *testing.T) {
		w := newWorkspace(t, "")
		r := runFake(t, invocation{args: w.args("--", "-x fake:echo")})
		if r.code != 0 || !strings.Contains(r.stdout, `"text":"-x fake:echo","model"`) {
			t.Errorf("got exit %d stdout %s", r.code, r.stdout)
		}
	})
	t.Run("bare thinking and retries before the prompt", func(t *testing.T) {
		w := newWorkspace(t, "")
		r := runFake(t, invocation{args: w.args("--retries", "--thinking", "--", "Reply with PONG")})
		if r.code != 0 {
			t.Errorf("got exit %d stderr %s", r.code, r.stderr)
		}
	})
}

// recordLines parses the RECORD file.
func recordLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("record line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestStdinAndRecord(t *testing.T) {
	w := newWorkspace(t, "")
	rec := filepath.Join(w.root, "record.jsonl")
	env := []string{"FAKE_CLINE_RECORD=" + rec, "CLINE_NO_AUTO_UPDATE=1"}

	piped := runFake(t, invocation{args: w.args("Reply fake:echo"), env: env, stdin: strings.NewReader("EXTRA STDIN LINE\n")})
	if !strings.Contains(piped.stdout, `"text":"Reply fake:echo\n\nEXTRA STDIN LINE","model"`) {
		t.Errorf("piped stdin not appended: %s", piped.stdout)
	}
	devnull := runFake(t, invocation{args: w.args("Reply fake:echo"), env: env})
	if !strings.Contains(devnull.stdout, `"text":"Reply fake:echo","model"`) {
		t.Errorf("/dev/null stdin changed the prompt: %s", devnull.stdout)
	}
	f, err := os.Open(filepath.Join(w.repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	file := runFake(t, invocation{args: w.args("--auto-approve", "false"), env: env, stdin: f})
	if file.code != 0 || !strings.Contains(file.stdout, `"text":"PONG"`) {
		t.Errorf("stdin file as the whole prompt: exit %d stdout %s", file.code, file.stdout)
	}
	usage := runFake(t, invocation{args: w.args("PONG"), env: env})
	if usage.code != 1 {
		t.Fatalf("got exit %d", usage.code)
	}

	lines := recordLines(t, rec)
	if len(lines) != 4 {
		t.Fatalf("got %d record lines, want 4", len(lines))
	}
	for i, want := range []string{"pipe", "devnull", "file", "devnull"} {
		if lines[i]["stdin"] != want {
			t.Errorf("line %d: got stdin %v, want %s", i, lines[i]["stdin"], want)
		}
	}
	first := lines[0]
	argv := first["argv"].([]any)
	if argv[len(argv)-1] != "Reply fake:echo" || argv[1] != "--json" {
		t.Errorf("got argv %v", argv)
	}
	if first["providersPath"] != filepath.Join(w.data, "settings", "providers.json") ||
		first["globalSettingsPath"] != filepath.Join(w.data, "settings", "global-settings.json") {
		t.Errorf("got paths %v %v", first["providersPath"], first["globalSettingsPath"])
	}
	if env := first["env"].(map[string]any); env["CLINE_NO_AUTO_UPDATE"] != "1" || len(env) != 1 {
		t.Errorf("got env %v, want only CLINE_NO_AUTO_UPDATE", env)
	}
	if got := strings.Join(toStrings(first["envKeys"].([]any)), ","); got != "CLINE_NO_AUTO_UPDATE,FAKE_CLINE_RECORD,HOME,PATH" {
		t.Errorf("got envKeys %s", got)
	}
	if first["scenario"] != "echo" || first["pid"].(float64) <= 0 || first["pgid"].(float64) <= 0 || first["startedAt"] == "" {
		t.Errorf("got record %v", first)
	}
	if lines[3]["usageError"] == nil {
		t.Errorf("usage error not recorded: %v", lines[3])
	}
}

func toStrings(v []any) []string {
	var out []string
	for _, e := range v {
		out = append(out, e.(string))
	}
	return out
}

func TestStateRetryAcrossProcesses(t *testing.T) {
	for _, withEnv := range []bool{true, false} {
		name := "data dir fallback"
		if withEnv {
			name = "FAKE_CLINE_STATE_DIR"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t, "a_text_pong")
			var env []string
			if withEnv {
				env = []string{"FAKE_CLINE_STATE_DIR=" + filepath.Join(w.root, "state")}
			}
			prompt := "Reply fake:http_429_then_ok?key=t1"
			first := runFake(t, invocation{args: w.args(prompt), env: env})
			second := runFake(t, invocation{args: w.args(prompt), env: env})
			other := runFake(t, invocation{args: w.args("Reply fake:http_429_then_ok?key=t2"), env: env})
			if first.code != 1 || !strings.Contains(first.stdout, `"finishReason":"error"`) {
				t.Errorf("first: got exit %d", first.code)
			}
			if second.code != 0 || !strings.Contains(second.stdout, `"finishReason":"completed"`) {
				t.Errorf("second: got exit %d", second.code)
			}
			if other.code != 1 {
				t.Errorf("other key: got exit %d, want 1 (separate counter)", other.code)
			}
		})
	}
}

func TestListScenariosDocumented(t *testing.T) {
	r := runFake(t, invocation{args: []string{"--list-scenarios"}})
	doc := readFile(t, "SCENARIOS.md")
	for name := range scenarios {
		if !strings.Contains(r.stdout, name+" ") {
			t.Errorf("--list-scenarios lacks %s", name)
		}
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("SCENARIOS.md lacks %s", name)
		}
	}
}

func TestStaticBinaryRunsWithEmptyEnvironment(t *testing.T) {
	f, err := elf.Open(fakeBin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("binary has an ELF interpreter: not static")
		}
	}
	dir := t.TempDir()
	cmd := newCmd(t, []string{"--json", "-c", dir, "--data-dir", "d", "Reply with PONG"})
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run with empty env: %v", err)
	}
	if !strings.Contains(string(out), `"finishReason":"completed"`) {
		t.Errorf("got %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "d", "settings", "providers.json")); err != nil {
		t.Errorf("relative --data-dir not resolved against -c: %v", err)
	}
}

func TestHugeOutputIsValidJSON(t *testing.T) {
	w := newWorkspace(t, "")
	const size = 3 << 20
	cmd := newCmd(t, w.args("Reply fake:huge?bytes=3145728"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	total, last := 0, ""
	for sc.Scan() {
		total += len(sc.Bytes()) + 1
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("invalid JSON line %.100q", sc.Text())
		}
		last = sc.Text()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if total < size || !strings.Contains(last, `"type":"run_result"`) {
		t.Errorf("got %d bytes, last %.200s; want >= %d bytes ending in run_result", total, last, size)
	}
}
