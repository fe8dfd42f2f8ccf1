//go:build e2e && linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/netns"
	"github.com/cline-mcp/cline-mcp/internal/npmcache"
)

// claudeCodeVersion is the Claude Code release the suite runs (npm @anthropic-ai/claude-code).
// .ci/run reads it from here to install the same release.
const claudeCodeVersion = "2.1.197"

// claudeCodeLatest is the newest Claude Code release, run beside claudeCodeVersion: it defers MCP
// tools behind its ToolSearch tool and opens with server/discover (protocol 2026-07-28). .ci/run
// reads it from here too.
const claudeCodeLatest = "2.1.328"

// envClaudeCode names a claude binary to use instead of the cached npm install of
// claudeCodeVersion; envClaudeCodeLatest does the same for claudeCodeLatest. Each must report
// its release's version.
const (
	envClaudeCode       = "CLINE_MCP_CLAUDE_CODE"
	envClaudeCodeLatest = "CLINE_MCP_CLAUDE_CODE_LATEST"
)

type claudeInstall struct {
	once sync.Once
	bin  string
	err  error
}

var claudeInstalls = struct {
	mu sync.Mutex
	by map[string]*claudeInstall
}{by: map[string]*claudeInstall{}}

// claudeCode returns the Claude Code binary of version, installing it on first use. Without it
// (no npm, no registry, no network namespaces) the test is skipped loudly, and fails under
// CI=true.
func claudeCode(t *testing.T, version string) string {
	t.Helper()
	claudeInstalls.mu.Lock()
	in := claudeInstalls.by[version]
	if in == nil {
		in = &claudeInstall{}
		claudeInstalls.by[version] = in
	}
	claudeInstalls.mu.Unlock()
	in.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		in.bin, in.err = installClaudeCode(ctx, version)
		if in.err == nil {
			in.err = netns.Run(func() error { return nil })
		}
	})
	if in.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but Claude Code %s cannot run here: %v", version, in.err)
		}
		t.Skipf("!!! SKIPPED: Claude Code %s cannot run here: %v", version, in.err)
	}
	return in.bin
}

// installClaudeCode finds the native binary npm installed into
// ${XDG_CACHE_HOME:-$HOME/.cache}/cline-mcp/claude-code-<version> (never inside the repository),
// installing it there when missing.
func installClaudeCode(ctx context.Context, version string) (string, error) {
	env := envClaudeCode
	if version == claudeCodeLatest {
		env = envClaudeCodeLatest
	}
	if bin := os.Getenv(env); bin != "" {
		return bin, checkClaudeVersion(ctx, bin, version)
	}
	dir, err := npmcache.Dir("claude-code-" + version)
	if err != nil {
		return "", err
	}
	find := func(ctx context.Context, prefix string) (string, error) { return claudeBinary(ctx, prefix, version) }
	return npmcache.Install(ctx, dir, "@anthropic-ai/claude-code@"+version, []string{"DISABLE_AUTOUPDATER=1"}, find)
}

// claudeBinary is the native claude of the platform package npm chose
// (node_modules/@anthropic-ai/claude-code-<os>-<arch>[-musl]/claude), checked with --version:
// it works whether or not npm ran the wrapper package's postinstall.
func claudeBinary(ctx context.Context, prefix, version string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(prefix, "node_modules", "@anthropic-ai", "claude-code-*", "claude"))
	if len(m) != 1 {
		return "", fmt.Errorf("want one platform binary under %s, found %v", prefix, m)
	}
	return m[0], checkClaudeVersion(ctx, m[0], version)
}

func checkClaudeVersion(ctx context.Context, bin, version string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = append(os.Environ(), "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", bin, err)
	}
	if v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " "); v != version {
		return fmt.Errorf("%s is Claude Code %q, want %s", bin, strings.TrimSpace(string(out)), version)
	}
	return nil
}

// claudeWorld is a world (HOME, work dir, fake Cline record) whose server is started by Claude
// Code (release version), not by the test.
type claudeWorld struct {
	*world
	version    string // of Claude Code
	legacy     bool   // Claude Code opens with initialize (legacyHandshake)
	bin        string
	serverArgs []string
	serverEnv  []string
	serverLog  string
}

// legacyHandshake after a release in newClaudeWorldAt's version makes that Claude Code open the
// session with initialize (MCP_PROTOCOL_NEGOTIATION=legacy: the path 2.1.328 falls back to when a
// server does not answer server/discover in time).
const legacyHandshake = "+initialize"

// newClaudeWorldAt is a claudeWorld for the Claude Code release version (with legacyHandshake
// appended: opening with initialize).
func newClaudeWorldAt(t *testing.T, version string, o worldOpts) *claudeWorld {
	t.Helper()
	version, legacy := strings.CutSuffix(version, legacyHandshake)
	bin := claudeCode(t, version)
	w, args, environ := prepareWorld(t, host, o)
	c := &claudeWorld{world: w, version: version, legacy: legacy, bin: bin, serverEnv: environ, serverLog: filepath.Join(w.root, "server.log")}
	c.serverArgs = append(args, "--log-file", c.serverLog)
	t.Cleanup(func() {
		if left := w.leaks(); left != "" {
			t.Errorf("leak after Claude Code exited: %s", left)
		}
	})
	return c
}

// claudeRun is what one `claude -p` session left behind.
type claudeRun struct {
	version string // of Claude Code
	legacy  bool   // opened with initialize
	api     *fakeAnthropic
	events  []map[string]any // --output-format stream-json lines
	debug   string           // --debug-file
	stderr  string
	err     error // of the claude process

	interrupted bool // SIGINT was sent (runOpts.interruptWhen)
}

// runOpts are the knobs of one session.
type runOpts struct {
	// calls are the model's tool calls, one a turn. With claudeCodeLatest each is preceded by a
	// ToolSearch with the words of toolQueries for its tool, and made only if the search found it.
	calls []toolUse
	// script, when set, is the model instead of calls (fakeAnthropic.script).
	script   func(req messagesRequest) []map[string]any
	truncate bool     // make Claude Code fall back to non-streaming requests
	env      []string // extra environment for Claude Code (MCP_TOOL_TIMEOUT=…)
	// interruptWhen, when set, is polled while Claude Code runs; once true, Claude Code gets
	// SIGINT (a user's Ctrl-C).
	interruptWhen func() bool
	// holdFinal, when set, holds the model's final answer until it reports true (at most 20 s),
	// as a real model's answer takes a while: Claude Code ends the session (and signals the server)
	// right after the final answer, and 2.1.328 writes the cancel of a timed-out call a few
	// milliseconds after it gives up on it.
	holdFinal func() bool
}

// run starts Claude Code headless in a private network namespace, with the fake Anthropic API
// on that namespace's loopback and cline-mcp (driving the fake Cline) as its only MCP server,
// and waits for it to exit.
func (c *claudeWorld) run(o runOpts) *claudeRun {
	t := c.t
	t.Helper()
	cfg := filepath.Join(c.root, fmt.Sprintf("mcp-%s.json", randHex(4)))
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"cline": map[string]any{
		"type": "stdio", "command": bins.ClineMCP, "args": c.serverArgs, "env": envMap(c.serverEnv)}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	debug := filepath.Join(c.root, fmt.Sprintf("claude-debug-%s.log", randHex(4)))
	argv := []string{"-p", "Use the cline tools as instructed.",
		"--mcp-config", cfg, "--strict-mcp-config",
		"--allowedTools", "mcp__cline__ask_cline,mcp__cline__apply_cline_edits,mcp__cline__ask_cline_workspace,mcp__cline__review_cline,mcp__cline__cline_job,mcp__cline__cline_sessions",
		"--output-format", "stream-json", "--verbose", "--debug-file", debug, "--no-session-persistence"}
	env := append(append([]string{}, c.serverEnv...),
		"ANTHROPIC_API_KEY=sk-ant-e2e-"+randHex(12),
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1")
	if c.legacy {
		env = append(env, "MCP_PROTOCOL_NEGOTIATION=legacy")
	}
	env = append(env, o.env...)
	r := &claudeRun{version: c.version, legacy: c.legacy}
	var stdout, stderr bytes.Buffer
	err := netns.Run(func() error {
		api, err := startFakeAnthropic(o.calls, o.truncate)
		if err != nil {
			return err
		}
		defer api.Close()
		api.mu.Lock()
		api.script = c.model(o)
		api.mu.Unlock()
		r.api = api
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.bin, argv...)
		cmd.Dir, cmd.Env = c.work, append(env, "ANTHROPIC_BASE_URL="+api.URL())
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil { // on this thread: the process lives in the namespace
			return err
		}
		exited := make(chan struct{})
		interrupter := make(chan bool, 1)
		if o.interruptWhen != nil {
			go func() { // until the condition holds or Claude Code exits on its own
				for !o.interruptWhen() {
					select {
					case <-exited:
						interrupter <- false
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
				interrupter <- cmd.Process.Signal(os.Interrupt) == nil
			}()
		} else {
			interrupter <- false
		}
		r.err = cmd.Wait()
		close(exited)
		r.interrupted = <-interrupter
		return nil
	})
	if err != nil {
		t.Fatalf("private network namespace: %v", err)
	}
	r.stderr = stderr.String()
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			r.events = append(r.events, ev)
		}
	}
	d, _ := os.ReadFile(debug)
	r.debug = string(d)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("claude stderr:\n%s\nclaude debug log (tail):\n%s\nserver log (tail):\n%s", mcpsession.Tail(r.stderr, 2000), mcpsession.Tail(r.debug, 6000), mcpsession.Tail(c.log(), 4000))
		}
	})
	return r
}

// model is the fake model of a session: o.script; else, for claudeCodeLatest, one that searches
// for each call's tool first; nil leaves fakeAnthropic's own calls. holdFinal wraps it.
func (c *claudeWorld) model(o runOpts) func(req messagesRequest) []map[string]any {
	script := o.script
	if script == nil && c.version == claudeCodeLatest {
		script = searchingModel(searchSteps(o.calls))
	}
	if o.holdFinal != nil {
		if script == nil {
			script = callingModel(o.calls)
		}
		script = holding(script, o.holdFinal)
	}
	return script
}

// log is the server's log so far.
func (c *claudeWorld) log() string {
	b, _ := os.ReadFile(c.serverLog)
	return string(b)
}

// protocolFaults are debug-log lines in which Claude Code reports a fault of the MCP session
// with our server (the TypeScript SDK's own messages and Claude Code's transport verdicts).
// Claude Code 2.1.328 adds its verdicts on the 2026-07-28 handshake: a result that lacks what that
// version requires, a server/discover probe not answered in time (it then falls back to
// initialize), and any error line about the server.
var protocolFaults = regexp.MustCompile(`(?m)^.*(Received a progress notification for an unknown token|Received a response for an unknown message ID|MCP server "cline": .*(connection dropped|Connection error|closed after .*with errors|Ignoring non-JSON line|failed to|Failed to|omits required fields|probe timed out|after its bound|legacy peer)|\[ERROR\].*MCP server "cline").*$`)

// wantClean asserts a session a user would call healthy: claude exited 0 with a result, and its
// debug log has no MCP protocol fault.
func (r *claudeRun) wantClean(t *testing.T) {
	t.Helper()
	if r.err != nil {
		t.Errorf("claude exited with %v", r.err)
	}
	if res := r.result(); res == nil || res["is_error"] == true {
		t.Errorf("no successful result event: %v", res)
	}
	r.wantNoFaults(t)
}

// modern is Claude Code's line for a session on protocol 2026-07-28, opened with server/discover.
const modern = `MCP server "cline": Connection established with capabilities: {"hasTools":true`

var modernEra = regexp.MustCompile(`"protocolEra":"modern","negotiatedProtocolVersion":"2026-07-28"`)

// wantEra asserts the protocol era Claude Code negotiated: the newest release opens with
// server/discover and must land on 2026-07-28 (unless told to open with initialize); the pinned
// one only knows initialize.
func (r *claudeRun) wantEra(t *testing.T, version string) {
	t.Helper()
	i := strings.Index(r.debug, modern)
	if i < 0 {
		t.Errorf("the debug log has no %q line", modern)
		return
	}
	line, _, _ := strings.Cut(r.debug[i:], "\n")
	if got := modernEra.MatchString(line); got != (version == claudeCodeLatest && !r.legacy) {
		t.Errorf("Claude Code %s: %s", version, line)
	}
}

// unknownProgress is Claude Code's line for a progress notification whose token it no longer
// knows, with the notification's progress value.
var unknownProgress = regexp.MustCompile(`Received a progress notification for an unknown token:.*?"progress":(\d+)`)

// progressWritten is the server's record, when it read a cancel, of the last progress value it
// had written for the request.
var progressWritten = regexp.MustCompile(`the client cancelled a request.*progressWritten=(\d+)`)

// wantNoProgressAfterCancel is wantClean for a call that Claude Code's MCP_TOOL_TIMEOUT cancels
// while progress flows. Claude Code forgets the token when its timer fires, before the cancel
// reaches the server, so notifications the server wrote before it read the cancel may still be
// reported as for "an unknown token" (a race no server can close); a notification the server
// wrote after it read the cancel (progress above the progressWritten the server logged then)
// is a fault, as is any other fault.
func (r *claudeRun) wantNoProgressAfterCancel(t *testing.T, serverLog string) {
	t.Helper()
	if r.err != nil {
		t.Errorf("claude exited with %v", r.err)
	}
	if res := r.result(); res == nil || res["is_error"] == true {
		t.Errorf("no successful result event: %v", res)
	}
	m := progressWritten.FindStringSubmatch(serverLog)
	if m == nil {
		t.Fatalf("the server did not log the cancel with progressWritten:\n%s", serverLog)
	}
	written, _ := strconv.Atoi(m[1])
	if written == 0 {
		t.Errorf("no progress was written before the cancel: the test proves nothing")
	}
	late := 0
	var other []string
	for _, f := range protocolFaults.FindAllString(r.debug, -1) {
		u := unknownProgress.FindStringSubmatch(f)
		if u == nil {
			other = append(other, f)
			continue
		}
		if n, _ := strconv.Atoi(u[1]); n > written {
			t.Errorf("progress %d reached Claude Code after the server read the cancel (it had written up to %d then): %.300s", n, written, f)
		} else {
			late++
		}
	}
	for _, f := range other {
		// Claude Code 2.1.197 counts an unknown token as a connection error and then reports
		// the connection as dropped: a consequence of the race above, not a fault of its own.
		if late > 0 && droppedAfterError.MatchString(f) {
			t.Logf("after the race: %s", f)
			continue
		}
		t.Errorf("Claude Code's debug log reports an MCP protocol fault: %s", f)
	}
	t.Logf("the server had written progress up to %d when it read the cancel; %d of them reached Claude Code after its timeout", written, late)
	r.wantEra(t, r.version)
}

// droppedAfterError are Claude Code's verdicts on a connection after an error was reported.
var droppedAfterError = regexp.MustCompile(`MCP server "cline": STDIO connection (dropped after|closed after .*with errors)`)

// wantNoFaults asserts the server connected and Claude Code's debug log has no MCP protocol fault.
func (r *claudeRun) wantNoFaults(t *testing.T) {
	t.Helper()
	if faults := protocolFaults.FindAllString(r.debug, 10); len(faults) > 0 {
		t.Errorf("Claude Code's debug log reports MCP protocol faults:\n%s", strings.Join(faults, "\n"))
	}
	if !strings.Contains(r.debug, `MCP server "cline": Successfully connected`) {
		t.Errorf("the debug log does not show the server connecting; is --debug-file still honoured?")
	}
	if r.version != "" {
		r.wantEra(t, r.version)
	}
}

// result is the final stream-json event.
func (r *claudeRun) result() map[string]any {
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i]["type"] == "result" {
			return r.events[i]
		}
	}
	return nil
}

// toolResults are the tool_result blocks of the model's last request (what the model read),
// without the results of ToolSearch.
func (r *claudeRun) toolResults() []block {
	reqs := r.api.Requests()
	if len(reqs) == 0 {
		return nil
	}
	last := reqs[len(reqs)-1]
	searches := map[string]bool{}
	for _, m := range last.Body.Messages {
		for _, b := range m.blocks() {
			if b.Type == "tool_use" && b.Name == "ToolSearch" {
				searches[b.ID] = true
			}
		}
	}
	var out []block
	for _, b := range last.toolResults() {
		if !searches[b.ToolUseID] {
			out = append(out, b)
		}
	}
	return out
}
