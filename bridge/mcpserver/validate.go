package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"unicode/utf16"

	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Limits from the seed (the rule tags of arguments state the timeout's; TestSchemaAgreementInput
// holds them to these). The Windows limits exist because cline.exe receives the prompt on a
// command line that CreateProcess caps at 32,767 UTF-16 code units.
const (
	DefaultTimeoutSeconds = 180
	MaxTimeoutSeconds     = 300
	WindowsMaxPrompt      = 20000
	WindowsMaxSystem      = 8000
	WindowsMaxTogether    = 24000
)

// thinkingLevel is a value of --thinking; its enum is cline.ThinkingLevels.
type thinkingLevel string

// arguments are the run tools' arguments: their inputSchemas are generated from this struct and
// every call is decoded into it (decode.go). Fields without omitempty are required for every
// tool; cwd is also required for the tools whose toolSpec says cwdRequired.
type arguments struct {
	Prompt         string            `json:"prompt" rule:"minLength=1" msg:"is required and must be a non-empty string" jsonschema:"The task or question for Cline."`
	Cwd            string            `json:"cwd,omitempty" rule:"minLength=1" msg:"must be a non-empty path"` // description per tool: cwdDescription
	Thinking       thinkingLevel     `json:"thinking,omitempty" rule:"default=none" jsonschema:"Reasoning effort (Cline's --thinking)."`
	TimeoutSeconds int               `json:"timeoutSeconds,omitempty" rule:"min=1,max=300,default=180" msg:"must be a positive integer number of seconds" jsonschema:"Deadline of the call, retries included (larger is rejected, not clamped)."`
	SystemPrompt   string            `json:"systemPrompt,omitempty" tools:"ask_cline" jsonschema:"Replaces Cline's system prompt (-s)."`
	Provider       string            `json:"provider,omitempty" rule:"pattern=id" jsonschema:"Provider id (-P) for this call only."`
	Model          string            `json:"model,omitempty" rule:"pattern=id" jsonschema:"Model id (-m) for this call only."`
	Isolation      sandbox.Isolation `json:"isolation,omitempty" jsonschema:"Stronger isolation than the server's floor: host, docker (hardened container) or kubernetes (a pod)."`
	Target         string            `json:"target,omitempty" tools:"review_cline" jsonschema:"uncommitted (staged, unstaged and untracked files), base:<ref> (HEAD against its merge base with ref, e.g. base:main) or commit:<sha>."`
	Focus          string            `json:"focus,omitempty" tools:"review_cline" jsonschema:"What to look at hardest, in your words (security, concurrency, an adversarial stance...)."`
	SessionID      string            `json:"sessionId,omitempty" tools:"ask_cline,apply_cline_edits,ask_cline_workspace" rule:"pattern=session" jsonschema:"Continue an earlier result's conversation (same tool, cwd and isolation)."`
	Protocol       run.Protocol      `json:"protocol,omitempty" jsonschema:"acp (a conversation with a sessionId) or json (one-shot); default the server's --cline-protocol."`
	MaxCostUSD     float64           `json:"maxCostUsd,omitempty" rule:"gt=0" msg:"must be a positive number of US dollars" jsonschema:"Spend limit in US dollars as the CLI reports it (past it: budget_exceeded); default and ceiling: the server's --max-cost-usd."`
	MaxIterations  int32             `json:"maxIterations,omitempty" rule:"min=1" msg:"must be a positive integer" jsonschema:"Iteration limit (a model call and its tool calls; past it: budget_exceeded); default and ceiling: the server's --max-iterations."`
	Background     bool              `json:"background,omitempty" jsonschema:"Run in the background: a jobId comes back at once; follow it with cline_job (no timeoutSeconds: the job's limits, far over 300 s)."`
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

// accepted is an accepted call and whether it runs in the background.
type accepted struct {
	call       run.Call
	background bool
}

func (v validator) call(tool run.Tool, raw any) (run.Call, error) {
	r, err := v.request(tool, raw)
	return r.call, err
}

func (v validator) request(tool run.Tool, raw any) (accepted, error) {
	var a arguments
	given, err := decode(tool, raw, &a)
	if err != nil {
		return accepted{}, err
	}
	if err := a.check(tool, v, given); err != nil {
		return accepted{}, err
	}
	call := run.Call{Tool: tool, Prompt: a.Prompt, SystemPrompt: a.SystemPrompt, Thinking: string(a.Thinking),
		TimeoutSeconds: a.TimeoutSeconds, Provider: a.Provider, Model: a.Model, Isolation: a.Isolation,
		Protocol: a.Protocol, SessionID: a.SessionID, Target: a.Target, Focus: a.Focus,
		MaxCostUSD: a.MaxCostUSD, MaxIterations: int(a.MaxIterations)}
	// A background call without timeoutSeconds gets the job's limit as its attempts' limit (the
	// job's idle limit still ends a silent run).
	if a.Background && !given["timeoutSeconds"] {
		call.TimeoutSeconds = v.jobSeconds
	}
	if a.SessionID == "" || given["cwd"] { // else the session's own cwd (run: planSession)
		if call.Cwd, err = v.cwd(a.Cwd); err != nil {
			return accepted{}, err
		}
	}
	return accepted{call, a.Background}, nil
}

// check holds the rules of arguments that no one field's schema states.
func (a arguments) check(tool run.Tool, v validator, given map[string]bool) error {
	if strings.TrimSpace(a.Prompt) == "" && (tool != run.ReviewCline || given["prompt"]) {
		return invalid("prompt is required and must be a non-empty string")
	}
	for _, f := range []struct{ name, val string }{{"prompt", a.Prompt}, {"systemPrompt", a.SystemPrompt}} {
		if strings.ContainsRune(f.val, 0) {
			return invalid("%s must not contain NUL characters (they cannot be passed on a command line)", f.name)
		}
	}
	if strings.ContainsRune(a.Cwd, 0) {
		return invalid("cwd must not contain NUL characters")
	}
	if v.goos == "windows" {
		p, s := utf16Len(a.Prompt), utf16Len(a.SystemPrompt)
		switch {
		case p > WindowsMaxPrompt:
			return invalid("prompt is %d characters; on Windows the limit is %d", p, WindowsMaxPrompt)
		case s > WindowsMaxSystem:
			return invalid("systemPrompt is %d characters; on Windows the limit is %d", s, WindowsMaxSystem)
		case p+s > WindowsMaxTogether:
			return invalid("prompt and systemPrompt together are %d characters; on Windows the limit is %d", p+s, WindowsMaxTogether)
		}
	}
	if a.Isolation != "" && !a.Isolation.AtLeast(v.floor) {
		return invalid("isolation %q is weaker than this server's floor %q (started with --isolation %s); a call may ask for more isolation, never less", a.Isolation, v.floor, v.floor)
	}
	if given["sessionId"] && !sessions.ValidID(a.SessionID) {
		return invalid("sessionId must match %s: a session id from an earlier result (got %s)", sessions.IDPattern, describe(a.SessionID))
	}
	if a.Protocol == run.ProtocolJSON && a.SessionID != "" {
		return invalid("protocol json cannot continue a session: sessions are the acp protocol's")
	}
	if a.Background && v.jobSeconds == 0 {
		return invalid("background is not available: this server keeps no jobs")
	}
	if _, _, err := review.ParseTarget(a.Target); err != nil {
		return invalid("%v", err)
	}
	if len(a.Focus) > 2000 || strings.ContainsRune(a.Focus, 0) {
		return invalid("focus must be at most 2000 characters, without NUL")
	}
	if !given["cwd"] && a.SessionID == "" && requiresArg(tool, "cwd") {
		return invalid("cwd is required for %s (the git checkout to work in)", tool)
	}
	return nil
}

// cwd resolves the working directory: absolute, existing, symlinks resolved; "" is the
// server's.
func (v validator) cwd(cwd string) (string, error) {
	var err error
	if cwd == "" {
		if cwd, err = v.wd(); err != nil {
			return "", invalid("cwd: the server's working directory is unavailable: %v", err)
		}
	}
	if !filepath.IsAbs(cwd) {
		base, err := v.wd()
		if err != nil {
			return "", invalid("cwd %q is relative and the server's working directory is unavailable: %v", cwd, err)
		}
		cwd = filepath.Join(base, cwd)
	}
	cwd = filepath.Clean(cwd)
	st, err := os.Stat(cwd)
	if err != nil {
		return "", invalid("cwd %q must be an existing directory: %v", cwd, err)
	}
	if !st.IsDir() {
		return "", invalid("cwd %q must be a directory, not a file", cwd)
	}
	// Resolve symlinks once, here, so every later use agrees: git reports resolved top levels,
	// the container mounts those, and its working dir must lie inside them (on macOS $TMPDIR
	// is under /var → /private/var). Paths reported back are the resolved ones.
	if cwd, err = filepath.EvalSymlinks(cwd); err != nil {
		return "", invalid("cwd: cannot resolve symlinks: %v", err)
	}
	return cwd, nil
}

// utf16Len counts characters the way the seed's Node bridge (and Windows) does.
func utf16Len(s string) int {
	return len(utf16.Encode([]rune(s)))
}
