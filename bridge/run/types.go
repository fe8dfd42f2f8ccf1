package run

import (
	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/review"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Tool names the run tools; each selects a tool policy and a workspace.
type Tool string

const (
	AskCline          Tool = "ask_cline"
	ApplyClineEdits   Tool = "apply_cline_edits"
	AskClineWorkspace Tool = "ask_cline_workspace"
	ReviewCline       Tool = "review_cline"
)

// Analysis reports whether the tool must never change the user's files.
func (t Tool) Analysis() bool { return t != ApplyClineEdits }

// Call is one validated tool call. The MCP layer fills it after validation; Runner.Do trusts it.
type Call struct {
	Tool           Tool
	Prompt         string
	SystemPrompt   string
	Cwd            string // absolute; "" means the server's working directory (ask_cline only)
	Thinking       string // none|low|medium|high|xhigh
	TimeoutSeconds int
	Provider       string
	Model          string
	// Isolation is what the call asked for; "" means the server's floor.
	Isolation sandbox.Isolation
	// Protocol is how this call speaks to the CLI; "" means the server's (--cline-protocol).
	Protocol Protocol
	// SessionID continues that conversation (the ACP engine; same tool, isolation and checkout).
	SessionID string
	// Target and Focus are review_cline's: what is reviewed (uncommitted, base:<ref>,
	// commit:<sha>; "" is uncommitted) and the review's focus.
	Target string
	Focus  string
	// MaxCostUSD and MaxIterations are the call's spend limits (0: the server's, budget.go).
	MaxCostUSD    float64
	MaxIterations int
	// Ask and Steer are what the caller lends the running call, read once when it begins: a way
	// to ask the user about a tool call (nil: no one to ask; ask.go) and the call's steer queue
	// (nil: none; steer.go).
	Ask   AskFunc
	Steer *Steer
}

// Override reports whether the call changes Cline's provider or model.
func (c Call) Override() bool { return c.Provider != "" || c.Model != "" }

// Usage is the token usage Cline reported for the run, as the parser read it.
type Usage = cline.Usage

// ChangedFile is one path the run changed in the checkout.
type ChangedFile struct {
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"`
	Status  string `json:"status"` // A, M, D, R, T, C
}

// GitReport is the host-side git evidence of apply_cline_edits (and the touched files of a workspace run).
type GitReport struct {
	HeadBefore   string            `json:"headBefore"`
	HeadAfter    string            `json:"headAfter"`
	RefBefore    string            `json:"refBefore,omitempty"`
	RefAfter     string            `json:"refAfter,omitempty"`
	NewRefs      map[string]string `json:"newRefs,omitempty"`
	ChangedRefs  map[string]string `json:"changedRefs,omitempty"`
	DeletedRefs  []string          `json:"deletedRefs,omitempty"`
	ChangedFiles []ChangedFile     `json:"changedFiles,omitempty"`
	WorkingTree  bool              `json:"workingTreeChanged"`
	UndoHint     string            `json:"undoHint,omitempty"`
	Error        string            `json:"error,omitempty" redact:"diagnostic"` // a git process's stderr
}

// WorktreeReport describes the disposable worktree of ask_cline_workspace. After a successful
// cleanup exactly one of Removed (deleted) and Pooled (kept, with what the run changed, for a
// later call that undoes it and verifies the worktree first) is set; neither means the cleanup
// failed and Path is the leftover.
type WorktreeReport struct {
	Commit string `json:"commit"`
	// Reused is set when the call ran in a pooled worktree of an earlier call, moved to Commit
	// and verified pristine, instead of a fresh one.
	Reused  bool `json:"reused"`
	Removed bool `json:"removed"`
	Pooled  bool `json:"pooled"`
	// Kept is set when the worktree stays for the call's session (the ACP engine): the next turn
	// runs in it, with what this one changed; it goes when the session expires.
	Kept    bool          `json:"kept,omitempty"`
	Path    string        `json:"path,omitempty"`
	Touched []ChangedFile `json:"touched,omitempty"`
}

// Result is the outcome of one call, success or failure. The MCP layer turns it into content and
// structuredContent in one place; nothing else formats results. Runner.Do redacts every string in
// it, nested ones included (redactResult): fields tagged `redact:"diagnostic"` at the thorough
// level, all others at the precise level.
type Result struct {
	OK       bool
	Text     string
	Warnings []string `redact:"diagnostic"`
	Attempts int
	// ExitCode and Signal describe the last attempt's process; nil when it never ran or was
	// killed without a code.
	ExitCode *int
	Signal   *string
	Duration float64 // seconds, whole call
	Model    string
	Usage    *Usage
	// Isolation is where the last attempt ran; AttemptIsolation lists every attempt's.
	Isolation        sandbox.Isolation
	AttemptIsolation []sandbox.Isolation
	// Enforcement is what the last attempt had enforced (enforcement.go); nil when no attempt ran.
	Enforcement *Enforcement

	// apply_cline_edits
	Diff          *string
	DiffTruncated bool
	ChangedFiles  []ChangedFile
	HeadBefore    string
	HeadAfter     string
	Git           *GitReport

	// ask_cline_workspace and review_cline
	Worktree *WorktreeReport

	// review_cline: the reviewed range and the findings (review.go)
	Review *review.Report

	// the ACP engine: the conversation this call belongs to (continue it with sessionId), its
	// turn number, and every tool call the policy rejected before it ran.
	SessionID string
	Turn      int
	Rejected  []Rejection

	// failure
	Kind      string
	Message   string `redact:"diagnostic"`
	Retryable bool
	// RetryAfterSeconds is when a retry can succeed (a refusal of the HTTP service's per-tenant
	// limits); 0: no hint.
	RetryAfterSeconds int
	StderrTail        string `redact:"diagnostic"`
	StdoutTail        string `redact:"diagnostic"`
}

// Progress receives short, already-redacted progress messages during a call.
// Implementations must be safe for concurrent use and must not block.
type Progress func(message string)

// Rejection is one tool call of the CLI that the tool's policy rejected before it ran.
type Rejection = acp.Rejection
