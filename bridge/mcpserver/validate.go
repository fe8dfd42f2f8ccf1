package mcpserver

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf16"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Limits from the seed. The Windows limits exist because cline.exe receives the prompt on a
// command line that CreateProcess caps at 32,767 UTF-16 code units.
const (
	DefaultTimeoutSeconds = 180
	MaxTimeoutSeconds     = 300
	WindowsMaxPrompt      = 20000
	WindowsMaxSystem      = 8000
	WindowsMaxTogether    = 24000
)

// reserved are property names that the original Node bridge rejected because they reach
// Object.prototype; we reject them too so that clients see the same contract.
var reserved = map[string]bool{"__proto__": true, "constructor": true, "prototype": true}

// invalidArg is a validation failure; its message names the field and the rule.
type invalidArg struct{ msg string }

func (e *invalidArg) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &invalidArg{msg: fmt.Sprintf(format, args...)}
}

// validator turns raw tool arguments into a run.Call, or says exactly which rule failed.
// Nothing is spawned, locked or written before it has accepted the call.
type validator struct {
	goos  string            // injectable so Windows limits are testable on Linux
	floor sandbox.Isolation // the server's isolation floor
	wd    func() (string, error)
	// jobSeconds is a background call's attempt limit when it gives no timeoutSeconds (the
	// job's overall limit); 0: background calls are refused (no job store).
	jobSeconds int
}

func (v validator) call(tool run.Tool, raw any) (run.Call, error) {
	call := run.Call{Tool: tool, Thinking: "none", TimeoutSeconds: DefaultTimeoutSeconds}
	if raw == nil {
		raw = map[string]any{}
	}
	args, ok := raw.(map[string]any)
	if !ok {
		return call, invalid("arguments must be a JSON object")
	}
	if path := findReserved(args, "arguments"); path != "" {
		return call, invalid("%s: reserved property name is not allowed (__proto__, constructor and prototype are rejected anywhere in the arguments)", path)
	}
	// Only the fields of the tool's inputSchema are accepted, so a typo never silently does less.
	fields := acceptedFields(tool)
	var unknown []string
	for k := range args {
		if !slices.Contains(fields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return call, invalid("unknown argument %q for %s (accepted: %s)", unknown[0], tool, strings.Join(fields, ", "))
	}

	if err := v.text(args, &call); err != nil {
		return call, err
	}
	if err := v.options(args, &call); err != nil {
		return call, err
	}
	if err := v.session(args, &call); err != nil {
		return call, err
	}
	if err := v.background(args, &call); err != nil {
		return call, err
	}
	if err := v.limits(args, &call); err != nil {
		return call, err
	}
	if err := v.review(args, &call); err != nil {
		return call, err
	}
	if call.SessionID != "" && !present(args, "cwd") {
		return call, nil // the session's own cwd (run: planSession)
	}
	if err := v.cwd(tool, args, &call); err != nil {
		return call, err
	}
	return call, nil
}

// text checks prompt and systemPrompt.
func (v validator) text(args map[string]any, call *run.Call) error {
	var err error
	if call.Prompt, err = str(args, "prompt"); err != nil {
		return err
	}
	if strings.TrimSpace(call.Prompt) == "" && (call.Tool != run.ReviewCline || present(args, "prompt")) {
		return invalid("prompt is required and must be a non-empty string")
	}
	if call.SystemPrompt, err = str(args, "systemPrompt"); err != nil {
		return err
	}
	for _, f := range []struct{ name, val string }{{"prompt", call.Prompt}, {"systemPrompt", call.SystemPrompt}} {
		if strings.ContainsRune(f.val, 0) {
			return invalid("%s must not contain NUL characters (they cannot be passed on a command line)", f.name)
		}
	}
	if v.goos == "windows" {
		p, s := utf16Len(call.Prompt), utf16Len(call.SystemPrompt)
		switch {
		case p > WindowsMaxPrompt:
			return invalid("prompt is %d characters; on Windows the limit is %d", p, WindowsMaxPrompt)
		case s > WindowsMaxSystem:
			return invalid("systemPrompt is %d characters; on Windows the limit is %d", s, WindowsMaxSystem)
		case p+s > WindowsMaxTogether:
			return invalid("prompt and systemPrompt together are %d characters; on Windows the limit is %d", p+s, WindowsMaxTogether)
		}
	}

	return nil
}

// options checks thinking, timeoutSeconds, provider, model and isolation.
func (v validator) options(args map[string]any, call *run.Call) error {
	var err error
	if th, present := args["thinking"]; present {
		s, ok := th.(string)
		if !ok || s == "" || !cline.ValidThinking(s) {
			return invalid("thinking must be one of %s (got %s)", strings.Join(cline.ThinkingLevels, ", "), describe(th))
		}
		call.Thinking = s
	}

	if t, present := args["timeoutSeconds"]; present {
		n, ok := t.(float64)
		if !ok || n != math.Trunc(n) || n < 1 {
			return invalid("timeoutSeconds must be a positive integer number of seconds (got %s)", describe(t))
		}
		if n > MaxTimeoutSeconds {
			return invalid("timeoutSeconds must be at most %d (got %s); it is rejected, not clamped", MaxTimeoutSeconds, describe(t))
		}
		call.TimeoutSeconds = int(n)
	}

	for _, f := range []struct {
		name string
		dst  *string
	}{{"provider", &call.Provider}, {"model", &call.Model}} {
		if *f.dst, err = str(args, f.name); err != nil {
			return err
		}
		if _, present := args[f.name]; present && !idPattern.MatchString(*f.dst) {
			return invalid("%s must match %s (got %s)", f.name, idPattern, describe(args[f.name]))
		}
	}

	if iso, present := args["isolation"]; present {
		s, _ := iso.(string)
		parsed, err := sandbox.ParseIsolation(s)
		if err != nil {
			return invalid("isolation must be %s (got %s)", isolationChoices(), describe(iso))
		}
		if !parsed.AtLeast(v.floor) {
			return invalid("isolation %q is weaker than this server's floor %q (started with --isolation %s); a call may ask for more isolation, never less", parsed, v.floor, v.floor)
		}
		call.Isolation = parsed
	}

	return nil
}

// review checks review_cline's target and focus.
func (v validator) review(args map[string]any, call *run.Call) error {
	var err error
	if call.Target, err = str(args, "target"); err != nil {
		return err
	}
	if _, _, err := review.ParseTarget(call.Target); err != nil {
		return invalid("%v", err)
	}
	if call.Focus, err = str(args, "focus"); err != nil {
		return err
	}
	if len(call.Focus) > 2000 || strings.ContainsRune(call.Focus, 0) {
		return invalid("focus must be at most 2000 characters, without NUL")
	}
	return nil
}

// limits checks the spend limits maxCostUsd (a positive number of US dollars) and maxIterations
// (a positive integer).
func (v validator) limits(args map[string]any, call *run.Call) error {
	if c, given := args["maxCostUsd"]; given {
		n, ok := c.(float64)
		if !ok || !(n > 0) || math.IsInf(n, 0) {
			return invalid("maxCostUsd must be a positive number of US dollars (got %s)", describe(c))
		}
		call.MaxCostUSD = n
	}
	if it, given := args["maxIterations"]; given {
		n, ok := it.(float64)
		if !ok || n != math.Trunc(n) || n < 1 || n > math.MaxInt32 {
			return invalid("maxIterations must be a positive integer (got %s)", describe(it))
		}
		call.MaxIterations = int(n)
	}
	return nil
}

// background checks background; a background call without timeoutSeconds gets the job's limit
// as its attempts' limit (the job's idle limit still ends a silent run).
func (v validator) background(args map[string]any, call *run.Call) error {
	b, given := args["background"]
	if !given {
		return nil
	}
	on, ok := b.(bool)
	if !ok {
		return invalid("background must be a boolean (got %s)", describe(b))
	}
	if on && v.jobSeconds == 0 {
		return invalid("background is not available: this server keeps no jobs")
	}
	if on && !present(args, "timeoutSeconds") {
		call.TimeoutSeconds = v.jobSeconds
	}
	return nil
}

// session checks sessionId (a conversation to continue) and protocol.
func (v validator) session(args map[string]any, call *run.Call) error {
	id, err := str(args, "sessionId")
	if err != nil {
		return err
	}
	if present(args, "sessionId") && !sessions.ValidID(id) {
		return invalid("sessionId must match %s: a session id from an earlier result (got %s)", sessions.IDPattern, describe(args["sessionId"]))
	}
	call.SessionID = id
	p, err := str(args, "protocol")
	if err != nil {
		return err
	}
	switch run.Protocol(p) {
	case "":
	case run.ProtocolJSON:
		if id != "" {
			return invalid("protocol json cannot continue a session: sessions are the acp protocol's")
		}
	case run.ProtocolACP:
	default:
		return invalid("protocol must be \"json\" or \"acp\" (got %s)", describe(args["protocol"]))
	}
	call.Protocol = run.Protocol(p)
	return nil
}

// cwd resolves the working directory: absolute, existing, symlinks resolved.
func (v validator) cwd(tool run.Tool, args map[string]any, call *run.Call) error {
	var err error
	if call.Cwd, err = str(args, "cwd"); err != nil {
		return err
	}
	if _, present := args["cwd"]; !present && requiresArg(tool, "cwd") {
		return invalid("cwd is required for %s (the git checkout to work in)", tool)
	}
	if call.Cwd == "" {
		if _, present := args["cwd"]; present {
			return invalid("cwd must be a non-empty path")
		}
		if call.Cwd, err = v.wd(); err != nil {
			return invalid("cwd: the server's working directory is unavailable: %v", err)
		}
	}
	if strings.ContainsRune(call.Cwd, 0) {
		return invalid("cwd must not contain NUL characters")
	}
	if !filepath.IsAbs(call.Cwd) {
		base, err := v.wd()
		if err != nil {
			return invalid("cwd %q is relative and the server's working directory is unavailable: %v", call.Cwd, err)
		}
		call.Cwd = filepath.Join(base, call.Cwd)
	}
	call.Cwd = filepath.Clean(call.Cwd)
	st, err := os.Stat(call.Cwd)
	if err != nil {
		return invalid("cwd %q must be an existing directory: %v", call.Cwd, err)
	}
	if !st.IsDir() {
		return invalid("cwd %q must be a directory, not a file", call.Cwd)
	}
	// Resolve symlinks once, here, so every later use agrees: git reports resolved top levels,
	// the container mounts those, and its working dir must lie inside them (on macOS $TMPDIR
	// is under /var → /private/var). Paths reported back are the resolved ones.
	if call.Cwd, err = filepath.EvalSymlinks(call.Cwd); err != nil {
		return invalid("cwd: cannot resolve symlinks: %v", err)
	}
	return nil
}

func present(args map[string]any, name string) bool {
	_, ok := args[name]
	return ok
}

func str(args map[string]any, name string) (string, error) {
	v, present := args[name]
	if !present {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", invalid("%s must be a string (got %s)", name, describe(v))
	}
	return s, nil
}

// findReserved returns the JSON path of the first reserved property name, or "".
func findReserved(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if reserved[k] {
				return path + "." + k
			}
			if p := findReserved(x[k], path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := findReserved(e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 60 {
			x = x[:60] + "…"
		}
		return fmt.Sprintf("%q", x)
	case float64:
		return fmt.Sprintf("%v", x)
	case bool:
		return fmt.Sprintf("%v", x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// isolationChoices is `"host" or "docker"`, from sandbox.Isolations.
func isolationChoices() string {
	q := make([]string, len(sandbox.Isolations))
	for i, iso := range sandbox.Isolations {
		q[i] = fmt.Sprintf("%q", iso)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// utf16Len counts characters the way the seed's Node bridge (and Windows) does.
func utf16Len(s string) int {
	return len(utf16.Encode([]rune(s)))
}
