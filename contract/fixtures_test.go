//go:build contract && linux

package contract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// fixture is one recorded scenario that internal/cmd/fake-cline reproduces, and how to make the real CLI
// do the same thing against the fake provider.
type fixture struct {
	name        string // the recording it mirrors
	fake        string // fake-cline directive, without "fake:"
	respond     func(dir string) fakeprovider.Responder
	thinking    string
	autoApprove bool
	readOnly    bool // the server's analysis policy: global settings with disabledTools
	// signals are sent once the run waits for the model (the provider got the request, stdout
	// showed iteration_start); every signal but the last must leave the process running.
	signals []syscall.Signal
}

func fixtures() []fixture {
	script := func(steps ...fakeprovider.Step) func(string) fakeprovider.Responder {
		return func(string) fakeprovider.Responder { return fakeprovider.Script(steps...) }
	}
	return []fixture{
		{name: "a_text_pong", fake: "pong", respond: script(fakeprovider.Text("PONG")), autoApprove: true},
		{name: "a_multiturn_text", fake: "multiturn", respond: script(fakeprovider.Text("Line one.\n\nLine two with `code`.\n")), autoApprove: true},
		{name: "g_thinking_high", fake: "thinking", thinking: "high", autoApprove: true,
			respond: script(fakeprovider.Step{Kind: fakeprovider.KindText, Reasoning: "The user wants the word PONG. I will answer with it.", Text: "PONG"})},
		{name: "b_edit_autoapprove_true", fake: "edit?replace_path=README.md", autoApprove: true,
			respond: func(dir string) fakeprovider.Responder {
				s := fakeprovider.Tools(
					editorCreate(dir, "hello.txt", "Hello from the fake model\n"),
					fakeprovider.Call{Name: "editor", Arguments: map[string]any{"path": filepath.Join(dir, "README.md"), "old_text": "hello", "new_text": "hello world"}},
				)
				s.Text = "I will create hello.txt and update README.md."
				return fakeprovider.Script(s, fakeprovider.Text("Created hello.txt and updated README.md."))
			}},
		{name: "c_http_429", fake: "http_429", respond: script(fakeprovider.Error(429, noWait)), autoApprove: true},
		{name: "e_http_401", fake: "http_401", respond: script(fakeprovider.Error(401, nil)), autoApprove: true},
		{name: "x_tools_disabled_readonly", fake: "try_mutate?read=README.md", autoApprove: true, readOnly: true,
			respond: func(dir string) fakeprovider.Responder {
				return fakeprovider.Script(
					fakeprovider.Tools(fakeprovider.Call{Name: "read_files", Arguments: map[string]any{"files": []string{filepath.Join(dir, "README.md")}}}),
					fakeprovider.Tools(editorCreate(dir, "mutated.txt", "mutated\n")),
					fakeprovider.Tools(fakeprovider.Call{Name: "run_commands", Arguments: map[string]any{"commands": []string{"touch " + filepath.Join(dir, "touched.txt")}}}),
					fakeprovider.Text("Done."),
				)
			}},
		// A failed command is success:false inside output[] (with error), stderr streams as its
		// own update (y_run_commands_mixed).
		{name: "y_run_commands_mixed", fake: "run_commands?cmd=false&cmd=ls%20/nonexistent-dir&cmd=echo%20ok", autoApprove: true,
			respond: script(fakeprovider.Tools(fakeprovider.Call{Name: "run_commands", Arguments: map[string]any{"commands": []string{"false", "ls /nonexistent-dir", "echo ok"}}}),
				fakeprovider.Text("Ran the commands."))},
		// The server's stop is SIGINT then SIGKILL because of these two (docs/cline-cli.md "Backends, signals and stdio").
		{name: "f_sigint_midrun", fake: "hang", respond: script(fakeprovider.Hang()), autoApprove: true,
			signals: []syscall.Signal{syscall.SIGINT}},
		{name: "f_double_sigterm_midrun", fake: "hang", respond: script(fakeprovider.Hang()), autoApprove: true,
			signals: []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}},
		{name: "b_denied_tools_mistake_limit", fake: "tool_denied_abort", autoApprove: false,
			respond: func(dir string) fakeprovider.Responder {
				return fakeprovider.Script(fakeprovider.Tools(editorCreate(dir, "x.txt", "x\n")))
			}},
	}
}

// TestFakeCLIMatchesRealCLI runs each fixture through the real CLI and through internal/cmd/fake-cline
// with the argv and environment the server uses, and compares what a bridge can observe: the
// exit code, the sequence of stdout event shapes (type, hook/event/content kind, finish reason,
// and the set of JSON key paths, with repeats collapsed), and the JSON stderr lines. A
// difference means the fake drifted from the CLI and the integration tests built on it can no
// longer be trusted.
func TestFakeCLIMatchesRealCLI(t *testing.T) {
	needSuite(t)
	t.Parallel()
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			real := runDirect(t, suite.cli, f, true)
			fake := runDirect(t, suite.bins.FakeCline, f, false)
			if real.exit != fake.exit {
				t.Errorf("exit code: real %d, fake %d", real.exit, fake.exit)
			}
			if d := diffShapes(real.shapes, fake.shapes); d != "" {
				t.Errorf("stdout shapes differ (real vs fake):\n%s\nreal stdout:\n%s", d, mcpsession.Tail(real.stdout, 6000))
			}
			if r, fk := strings.Join(real.stderrJSON, ","), strings.Join(fake.stderrJSON, ","); r != fk {
				t.Errorf("JSON stderr lines: real [%s], fake [%s]", r, fk)
			}
			t.Logf("%s: %d shapes, exit %d, real %v, fake %v", f.name, len(real.shapes), real.exit, real.took.Round(100*time.Millisecond), fake.took.Round(10*time.Millisecond))
		})
	}
}

type direct struct {
	exit       int
	stdout     string
	shapes     []string
	stderrJSON []string
	took       time.Duration
}

// runDirect runs one CLI (real or fake) the way the server would, against its own fake provider,
// HOME and git work tree.
func runDirect(t *testing.T, bin string, f fixture, real bool) direct {
	t.Helper()
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	providers := filepath.Join(home, ".cline", "data", "settings", "providers.json")
	for _, d := range []string{work, filepath.Dir(providers), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	gitInit(t, work, map[string]string{"README.md": "hello\n"})
	prov, err := fakeprovider.Start(f.respond(work))
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Close()
	b, _ := json.MarshalIndent(providersJSON(prov.BaseURL()), "", "  ")
	if err := os.WriteFile(providers, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	thinking := f.thinking
	args := cline.Args(cline.Request{Prompt: "Do the task please fake:" + f.fake, Cwd: work, Thinking: thinking, AutoApprove: f.autoApprove})
	extra := map[string]string{}
	if f.readOnly {
		gs, err := cline.GlobalSettings(nil, cline.AnalysisTools(false))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, "global-settings.json")
		if err := os.WriteFile(p, gs, 0o600); err != nil {
			t.Fatal(err)
		}
		extra["CLINE_GLOBAL_SETTINGS_PATH"] = p
	}
	env := cline.Env([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + filepath.Join(root, "tmp"),
		"FAKE_CLINE_STATE_DIR=" + filepath.Join(root, "tmp")}, extra)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = env, work
	var stderr bytes.Buffer
	stdout := &watchBuffer{needle: []byte(`"iteration_start"`), seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	start := time.Now()
	if len(f.signals) == 0 {
		err = cmd.Run()
	} else {
		err = signalled(t, cmd, f.signals, stdout.seen, prov, real)
	}
	d := direct{stdout: stdout.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		d.exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", bin, err)
	}
	if real && len(prov.Chats()) == 0 {
		t.Fatalf("the real CLI never called the provider; stderr:\n%s", mcpsession.Tail(stderr.String(), 3000))
	}
	d.shapes, err = shapes([]byte(d.stdout))
	if err != nil {
		t.Fatalf("%s stdout: %v\n%s", bin, err, mcpsession.Tail(stdout.String(), 3000))
	}
	sc := bufio.NewScanner(&stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			d.stderrJSON = append(d.stderrJSON, fmt.Sprint(m["type"]))
		}
	}
	return d
}

// signalled starts cmd, waits until it waits for the model, and sends the signals.
func signalled(t *testing.T, cmd *exec.Cmd, sigs []syscall.Signal, started <-chan struct{}, prov *fakeprovider.Provider, real bool) error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitFor := func(ch <-chan struct{}, what string) {
		select {
		case <-ch:
		case err := <-exited:
			t.Fatalf("%s exited (%v) before %s", cmd.Path, err, what)
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("%s: no %s within 2 minutes", cmd.Path, what)
		}
	}
	waitFor(started, "iteration_start on stdout")
	if real {
		waitFor(prov.Arrived(1), "request to the provider")
	}
	for i, sig := range sigs {
		if err := cmd.Process.Signal(sig); err != nil {
			return err
		}
		if i == len(sigs)-1 {
			break
		}
		// The CLI must ignore this one: it must still run a while later.
		select {
		case err := <-exited:
			t.Fatalf("%s exited (%v) after %v; want it to keep running", cmd.Path, err, sig)
		case <-time.After(2 * time.Second):
		}
	}
	select {
	case err := <-exited:
		return err
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("%s still runs a minute after %v", cmd.Path, sigs[len(sigs)-1])
		return nil
	}
}

// watchBuffer collects output and closes seen once needle was written.
type watchBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	needle []byte
	seen   chan struct{}
	closed bool
}

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if !w.closed && bytes.Contains(w.buf.Bytes(), w.needle) {
		w.closed = true
		close(w.seen)
	}
	return n, err
}

func (w *watchBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// shapes turns --json stdout into one signature per line, collapsing consecutive repeats
// (streaming splits text into as many deltas as the provider sends chunks).
func shapes(stdout []byte) ([]string, error) {
	var out []string
	for _, line := range bytes.Split(bytes.TrimRight(stdout, "\n"), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("line %q is not a JSON object: %w", line, err)
		}
		s := signature(m) + " " + strings.Join(keyPaths(m, ""), ",")
		if len(out) > 0 && out[len(out)-1] == s {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// signature names a line by the values that select its meaning.
func signature(m map[string]any) string {
	parts := []string{fmt.Sprint(m["type"])}
	add := func(obj map[string]any, keys ...string) {
		for _, k := range keys {
			if v, ok := obj[k]; ok {
				parts = append(parts, k+"="+fmt.Sprint(v))
			}
		}
	}
	add(m, "hookEventName", "finishReason", "reason")
	if ev, ok := m["event"].(map[string]any); ok {
		add(ev, "type", "contentType", "toolName", "reason", "recoverable", "errorClass", "hadToolCalls")
	}
	return strings.Join(parts, " ")
}

// keyPaths lists the object keys of v recursively ("event.usage.inputTokens"); array elements
// share the path "[]".
func keyPaths(v any, prefix string) []string {
	set := map[string]bool{}
	var walk func(v any, p string)
	walk = func(v any, p string) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				kp := k
				if p != "" {
					kp = p + "." + k
				}
				set[kp] = true
				walk(val, kp)
			}
		case []any:
			for _, e := range x {
				walk(e, p+"[]")
			}
		}
	}
	walk(v, prefix)
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// diffShapes returns "" when the sequences match, else a line-by-line listing.
func diffShapes(real, fake []string) string {
	if strings.Join(real, "\n") == strings.Join(fake, "\n") {
		return ""
	}
	var b strings.Builder
	for i := 0; i < max(len(real), len(fake)); i++ {
		r, f := "(none)", "(none)"
		if i < len(real) {
			r = real[i]
		}
		if i < len(fake) {
			f = fake[i]
		}
		mark := "  "
		if r != f {
			mark = "≠ "
		}
		fmt.Fprintf(&b, "%s%2d real: %s\n   %2d fake: %s\n", mark, i, r, i, f)
	}
	return b.String()
}
