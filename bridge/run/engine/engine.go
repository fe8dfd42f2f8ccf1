// Package engine speaks to the Cline CLI for one turn of a call. An engine gets a plain value
// that describes the turn (Turn: the prepared spec and its executor, the deadline, the sinks for
// progress, events and output, the prompt and session of an ACP turn) and returns what happened
// (Facts: ran, exit, verdict, tails, tool calls, session id, rejected tool calls). Spend limits
// (Budget) and the redactor (Redactor) are collaborators it is handed; it never sees the call or
// the runner, so the call's promises — settings discipline, tool policy, workspace, retries,
// redaction of the result — hold whatever the engine.
//
// JSON (here) is the one-shot `cline --json` run: one process per attempt, its NDJSON stream read
// by cline.Parser. ACP (acp.go) is a conversation over the Agent Client Protocol; it owns its warm
// processes (agents.go) and the session a turn opens or continues.
package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/redact"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Engine runs turns of the CLI.
type Engine interface {
	// Argv are the CLI's arguments for req (without the executable).
	Argv(req cline.Request) []string
	// Env adds what the engine needs to the child's environment before the process starts;
	// providers is the providers.json the attempt runs with (the user's file, or the attempt's
	// private copy) and override the provider the call asks for. It returns the provider block
	// it read (ACP), for Turn.Provider; a credential it reads is learned by red.
	Env(providers, override string, extra map[string]string, red Redactor) Provider
	// Sessions reports whether the engine's runs are conversations that a later call continues.
	Sessions() bool
	// Run executes the turn and says what happened.
	Run(ctx context.Context, t Turn) Facts
}

// Turn is one attempt as the engine sees it.
type Turn struct {
	N         int  // the attempt's number, from 1
	Container bool // the run is in a container (it may have written there, whatever it reports)
	Exec      sandbox.Executor
	// Spec is the prepared run: executable, arguments, environment, directory, mounts, settings
	// copy and tool-policy files.
	Spec sandbox.Spec
	// Deadline is the call's: it covers every attempt. TimeoutSeconds is the call's limit.
	Deadline       time.Time
	TimeoutSeconds int
	// Analysis is an analysis tool's run; Allowed its tool allow-list (nil: the seed policy).
	Analysis bool
	Allowed  []string
	// Progress takes the call's progress messages, Event each live event of the CLI.
	Progress func(string)
	Event    func(cline.Event)
	Red      Redactor
	Budget   Budget

	// An ACP turn: the prompt text, the permission policy, the directory of the session, the
	// session to continue ("": a new one), its data dir (where the CLI keeps its manifests), the
	// model to select and the thinking level asked for.
	Prompt    string
	Policy    acp.Policy
	Dir       string
	SessionID string
	DataDir   string
	Model     string
	Thinking  string
	// Provider is what Env read before the process started; never read again.
	Provider Provider
	// KeepAs is "" when the process must not outlive the turn; else the class of calls (their
	// policy files) that may share the kept process.
	KeepAs string
	// Shape is a container turn's fingerprint (its spec without the call's own directories): a
	// container is kept only for the next turn of its session (SessionID) with the same shape (a
	// key-less one when its egress grant can be settled between turns); a spare (Spare) is taken
	// only by a first turn with the same shape.
	Shape string
	// Own is a directory of policy files a kept process takes over; the attempt removes what is
	// left in it.
	Own *Owned
	// Steer takes the next steer message of the call (false: none waiting).
	Steer func() (string, bool)
	// Spare, set on a container first turn whose process may be kept, makes the run of a spare
	// agent (spares.go) from the turn's spec: fresh directories in place of the call's.
	Spare func(sandbox.Spec) (Spare, error)
}

// Facts are what one turn produced.
type Facts struct {
	// Err is set when the process could not be run (start, create); Deadline says the call's
	// deadline had passed by then. The other facts are then empty but the tails.
	Err      error
	Deadline bool
	Ran      bool // the process started
	Exit     sandbox.Exit
	Verdict  cline.Verdict
	// ToolCalls counted; MayHaveWritten: it ran in a container or reported a successful mutating
	// tool call.
	ToolCalls      int
	MayHaveWritten bool
	StdoutTail     string
	StderrTail     string
	// SessionID is the ACP session the turn ran in; Rejected the tool calls its policy refused.
	SessionID string
	Rejected  []acp.Rejection
	// Warnings are the turn's own (an ACP turn: a thinking level it could not apply).
	Warnings []string
	// Kept is set when the process (and its container) was kept for a later turn; its Exit then
	// carries only the container's report (what it was created with).
	Kept bool
	// DataDir is set when the turn ran in a spare agent: the session data dir it brought, now
	// the session's (the call's own was not used).
	DataDir string
	// CopyBack is a copy-mode executor's refusal to bring the run's changes back: the run
	// happened, nothing was written to the host.
	CopyBack *sandbox.CopyBackError
}

// Budget follows what a call spends against its limits; the engine tells it when a turn runs and
// what it cost, and it may stop the turn (the stop given to Follow).
type Budget interface {
	// Follow starts following a turn, Unfollow stops: a limit reached after it is not acted on.
	Follow(stop context.CancelFunc)
	Unfollow()
	// SetCost is the running turn's cost so far; WatchesCost says whether a cost limit is set.
	SetCost(usd float64)
	WatchesCost() bool
	// Verdict turns a verdict of a turn a limit ended into budget_exceeded.
	Verdict(v cline.Verdict) cline.Verdict
	// OverAtEnd warns of a limit passed by a cost that came only with the turn's end.
	OverAtEnd() string
}

// Redactor is the call's redactor as an engine uses it: tails and text are redacted with
// everything the call knows, Learn adds a credential.
type Redactor interface {
	NewTail(n int) *redact.Tail
	Text(s string) string
	Learn(values ...string)
}

// Owned is a directory (and the lifeline's untrack of it) that belongs to whoever holds it.
type Owned struct {
	Dir     string
	Untrack func()
}

// Release removes the directory and untracks it.
func (o *Owned) Release() {
	if o == nil {
		return
	}
	if o.Dir != "" {
		_ = os.RemoveAll(o.Dir)
		o.Dir = ""
	}
	if o.Untrack != nil {
		o.Untrack()
		o.Untrack = nil
	}
}

// keep untracks the directory and leaves it: it belongs to a session now.
func (o *Owned) keep() {
	if o.Untrack != nil {
		o.Untrack()
	}
	*o = Owned{}
}

// take moves what o holds to the caller.
func (o *Owned) take() Owned {
	if o == nil {
		return Owned{}
	}
	x := *o
	*o = Owned{}
	return x
}

// JSON is the one-shot `cline --json` engine.
type JSON struct{}

func (JSON) Argv(req cline.Request) []string { return cline.Args(req) }

func (JSON) Env(string, string, map[string]string, Redactor) Provider { return Provider{} }

func (JSON) Sessions() bool { return false }

func (JSON) Run(ctx context.Context, t Turn) Facts {
	parser := cline.NewParser(t.Event)
	stderr := &cline.StderrScanner{}
	outTail, errTail := t.Red.NewTail(redact.DefaultTailChars), t.Red.NewTail(redact.DefaultTailChars)
	spec := t.Spec
	spec.Stdout = io.MultiWriter(parser, outTail)
	spec.Stderr = io.MultiWriter(stderr, errTail)

	actx, cancel := context.WithDeadline(ctx, t.Deadline)
	bctx, stop := context.WithCancel(actx) // a spend limit ends the run here
	t.Budget.Follow(stop)
	exit, err := t.Exec.Run(bctx, spec)
	t.Budget.Unfollow()
	deadline := errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	stop()
	cancel()
	parser.Close()
	stderr.Close()
	outTail.Flush()
	errTail.Flush()
	f := Facts{StdoutTail: outTail.String(), StderrTail: errTail.String()}
	if errors.As(err, &f.CopyBack) {
		err = nil
	}
	if err != nil {
		f.Err, f.Deadline = err, deadline
		return f
	}
	f.Ran, f.Exit = true, exit
	sum := parser.Summary()
	f.ToolCalls = sum.ToolCalls
	f.MayHaveWritten = t.Container || len(sum.MutatingSuccesses) > 0
	f.Verdict = t.Budget.Verdict(cline.Classify(cline.Outcome{
		ExitCode:       exit.Code,
		Signal:         exit.Signal,
		TimedOut:       exit.Stopped && deadline,
		Cancelled:      exit.Stopped && !deadline,
		TimeoutSeconds: t.TimeoutSeconds,
		Elapsed:        exit.Duration,
		Stdout:         sum,
		Stderr:         stderr.Summary(),
		OOMKilled:      exit.OOMKilled,
		Analysis:       t.Analysis,
		Allowed:        t.Allowed,
	}))
	return f
}
