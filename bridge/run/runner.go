// Package run owns one tool call from plan to result. Runner.Do reads as the call goes:
//
//  1. plan: the isolation, max(asked, the server's floor);
//  2. wait: apply_cline_edits calls on one checkout one at a time, then one of MaxConcurrent slots,
//     in arrival order (queue.go, checkoutlock.go);
//  3. prepare: the tool's workspace (space.go) records what the host relies on afterwards and says
//     where the CLI runs — the cwd (ask_cline), the user's checkout with git evidence
//     (apply_cline_edits, apply.go) or a disposable worktree (ask_cline_workspace, workspace.go);
//  4. attempts under the seed's retry policy (attempt.go): the call's prep (prep.go) makes each
//     attempt's spec under the settings discipline — the user's file for a default host run, a
//     private copy otherwise (docker.go for containers) — and the analysis tool policy
//     (policy.go); the call hands it to its engine as a plain engine.Turn (engine.go builds it)
//     and takes back engine.Facts: ran, exit, verdict, tails, tool calls, session id, rejected
//     tool calls; each attempt returns its warnings;
//  5. finish: the workspace's epilogue — diff and commit check, the worktree's release — on every
//     path, also after a failure or cancel, on a ctx bounded by epilogueTimeout; then every string
//     of the result is redacted (redaction.go).
//
// The engines live in bridge/run/engine and never see the call or the runner: the spend limits
// (budget) and the redactor are collaborators a Turn carries. A new tool is a Tool constant, a
// workspace in workspaceFor (or one of the three) and its schema in bridge/mcpserver. A new engine
// implements engine.Engine and is chosen in New; the call's settings discipline, policy,
// workspace, retries and redaction stay as they are.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/redact"
	"github.com/cline-mcp/cline-mcp/bridge/run/engine"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Config wires a Runner. cmd/cline-mcp builds it from flags and the environment.
type Config struct {
	// ClinePath resolves the host executable for each call (--cline, CLINE_MCP_CLINE, PATH), so
	// a CLI installed or updated while the server runs is picked up.
	ClinePath func() (string, error)
	Host      sandbox.Executor
	// Docker is nil when Docker isolation is unavailable; DockerErr then says why, and a call
	// that needs Docker fails with launch_failed instead of falling back to the host.
	Docker    sandbox.Executor
	DockerErr error
	// DockerCline is the executable's path inside the image.
	DockerCline string
	// DockerEnv names server environment variables passed into the container (API keys the
	// user's provider reads from the environment, for example).
	DockerEnv []string
	// DockerEgress is the executor's egress mode (sandbox.EgressProvider, EgressNone, EgressOpen):
	// in provider mode each run's spec names its provider's endpoints; open runs get a warning.
	// EgressAllow are the endpoints the server allows every run (--egress-allow).
	DockerEgress sandbox.EgressMode
	EgressAllow  []string

	Floor sandbox.Isolation
	// Container is the isolation of the Docker executor above: docker (the default) or
	// kubernetes (a sandbox/kubernetes executor). A call, floor or retry that asks for a
	// container gets this one.
	Container      sandbox.Isolation
	RetryIsolation sandbox.Isolation // "" = retries use the first attempt's isolation

	// Env is the server's environment, the base of the child's.
	Env  []string
	Home string

	// Settings is the user's providers.json (*settings.Store), Git the host-side git (*git.Git),
	// Worktrees the disposable worktrees of ask_cline_workspace (ManagedWorktrees).
	Settings  Settings
	Git       Git
	Worktrees Worktrees

	// MaxConcurrent bounds the calls that run at once (Cline processes or containers, with their
	// worktrees and git work); later calls wait in arrival order. 0 = no limit.
	MaxConcurrent int
	// CheckoutLocks, when set, is a private directory of the user where apply_cline_edits takes a
	// lock per checkout that all cline-mcp processes share; "" orders applies within this process
	// only.
	CheckoutLocks string

	// MaxCostUSD and MaxIterations are the server's spend limits of a call (0: none): the
	// default of a call that sets none, and the most a call may set (budget.go).
	MaxCostUSD    float64
	MaxIterations int
	// Protocol is how attempts speak to the CLI: ProtocolJSON ("" too) or ProtocolACP; a call
	// may choose its own (Call.Protocol), and a call that continues a session speaks ACP.
	Protocol Protocol
	// Sessions keeps the ACP engine's conversations (nil: results carry no sessionId).
	Sessions *sessions.Store
	// WarmAgents is how many ACP processes of host calls are kept for later calls (0: none), and
	// WarmIdle for how long an unused one is kept (0: 5 minutes).
	WarmAgents int
	WarmIdle   time.Duration
	// Spares is how many spare ACP processes are started ahead for the first turns of Docker and
	// Kubernetes conversations (spare.go; 0: none): the server's warm containers (--docker-warm)
	// or warm pods (--k8s-warm).
	Spares int
	// SeedPolicy runs analysis tools exactly as the seed did (--auto-approve false), which
	// denies every tool, reading included.
	SeedPolicy bool
	// AskCommands leaves apply_cline_edits' commands on the ACP engine to the user (ask.go), each
	// question answered within AskTimeout (0: DefaultAskTimeout) or refused.
	AskCommands bool
	AskTimeout  time.Duration
	// Backoff is the pause before the retry; nil means 2–3 s.
	Backoff func() time.Duration
	// StopGrace and SettleGrace are passed to the executors (zero = their defaults).
	StopGrace   time.Duration
	SettleGrace time.Duration
	TempDir     string
	Logger      *slog.Logger
	// Instance is the server's instance id (sandbox/proc), put into every host run's environment
	// as sandbox.InstanceEnv so a later server can end the runs of one that died.
	Instance string
	// TrackDir, when set, is told each call's private temp dir (it holds the settings copy, with
	// keys) and untracked after its removal: sandbox/lifeline removes it if the server dies.
	TrackDir func(path string) (untrack func())
}

// Runner executes calls. It is safe for concurrent use; one Runner serves the whole server.
type Runner struct {
	cfg       Config
	log       *slog.Logger
	versions  versionCache
	engine    engine.Engine // how attempts speak to the CLI by default (bridge/run/engine)
	acp       *engine.ACP   // the ACP engine, with its warm processes
	leases    leases        // worktrees kept for workspace sessions (session.go)
	layouts   layouts       // repository layouts of live container sessions (livesession.go)
	dirs      dirLayouts    // repository layouts of ask_cline's directories (dirlayout.go)
	slots     slots         // MaxConcurrent
	checkouts keyedSlots    // apply_cline_edits, per checkout
}

// New checks the configuration and fills defaults.
func New(cfg Config) (*Runner, error) {
	if cfg.ClinePath == nil || cfg.Host == nil || cfg.Settings == nil || cfg.Git == nil || cfg.Worktrees == nil {
		return nil, errors.New("run config: ClinePath, Host, Settings, Git and Worktrees are required")
	}
	if cfg.MaxConcurrent < 0 {
		return nil, errors.New("run config: MaxConcurrent must not be negative")
	}
	if cfg.Floor == "" {
		cfg.Floor = sandbox.IsolationHost
	}
	if cfg.Container == "" {
		cfg.Container = sandbox.IsolationDocker
	}
	if cfg.Floor.Container() {
		cfg.Floor = cfg.Container
	}
	if cfg.RetryIsolation.Container() {
		cfg.RetryIsolation = cfg.Container
	}
	if cfg.Backoff == nil {
		cfg.Backoff = func() time.Duration { return 2*time.Second + rand.N(time.Second) }
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	// The private dirs are mounted into containers at their own paths; resolved once so a
	// symlinked $TMPDIR (macOS: /var → /private/var) names the same place everywhere.
	if r, err := filepath.EvalSymlinks(cfg.TempDir); err == nil {
		cfg.TempDir = r
	}
	if cfg.DockerCline == "" {
		cfg.DockerCline = "/usr/local/bin/cline"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.WarmIdle <= 0 {
		cfg.WarmIdle = 5 * time.Minute
	}
	acpEngine := engine.NewACP(cfg.WarmAgents, cfg.WarmIdle, cfg.Logger)
	acpEngine.KeepSpares(cfg.Spares)
	if r, ok := cfg.Docker.(interface{ OnNoRoom(func()) }); ok && cfg.Protocol == ProtocolACP {
		r.OnNoRoom(acpEngine.MakeRoom) // a pod a call waits for comes before kept ones
	}
	var eng engine.Engine = engine.JSON{}
	switch cfg.Protocol {
	case "", ProtocolJSON:
	case ProtocolACP:
		eng = acpEngine
	default:
		return nil, fmt.Errorf("run config: unknown protocol %q (json or acp)", cfg.Protocol)
	}
	return &Runner{cfg: cfg, log: cfg.Logger, engine: eng, acp: acpEngine, slots: slots{limit: cfg.MaxConcurrent}}, nil
}

// call is the flow of one Do: the plan, the wait, the prologue, the attempts and the result.
// What its attempts are prepared with — workspace, settings discipline, session, tool policy,
// container spec — is its prep (prep.go). Warnings of the plan and the workspace are gathered
// here; each attempt returns its own.
type call struct {
	Call
	r        *Runner
	progress Progress          // the caller's, through the call's redactor
	red      *secrets          // this call's redactor; learns the credentials the call reads
	iso      sandbox.Isolation // first attempt's isolation
	engine   engine.Engine     // how this call's attempts speak to the CLI (engine.go)
	budget   *budget           // what the call spends against its limits (budget.go)
	prep     *prep             // what the attempts are prepared with (prep.go)
	res      Result
	warnings []string
}

// epilogueTimeout bounds host-side work that must happen even after a cancel.
const epilogueTimeout = 2 * time.Minute

// epilogue is the ctx of work that must happen even after a cancel, bounded by epilogueTimeout.
func epilogue(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), epilogueTimeout)
}

func settingsOverride(c Call) settings.Override {
	return settings.Override{Provider: c.Provider, Model: c.Model}
}

// Do runs one validated call to its result. It never panics on user input and never returns
// before everything it started is stopped and cleaned up.
func (r *Runner) Do(ctx context.Context, c Call, progress Progress) Result {
	if progress == nil {
		progress = func(string) {}
	}
	start := time.Now()
	k := &call{Call: c, r: r}
	k.iso = c.Isolation
	if k.iso == "" || !k.iso.AtLeast(r.cfg.Floor) {
		k.iso = r.cfg.Floor
	}
	if k.iso.Container() {
		k.iso = r.cfg.Container
	}
	k.red = r.callSecrets()
	k.engine = r.engineFor(c)
	pol, err := r.repoPolicy(c)
	refused := &failure{cline.KindLaunchFailed, errText(err)}
	var allowOnly *[]string
	if err == nil {
		allowOnly, refused = k.tighten(pol)
	}
	k.budget = r.budgetFor(k)
	// Every progress message leaves through the call's redactor, with what it knows by then.
	k.progress = func(m string) { progress(k.red.Text(m)) }
	k.prep = &prep{Call: &k.Call, r: r, red: k.red, engine: k.engine, budget: k.budget, progress: k.progress,
		allowOnly: allowOnly, caller: caller{ask: c.Ask, steer: c.Steer}}
	var res Result
	if refused != nil {
		res = k.fail(refused.kind, refused.msg, false)
	} else {
		res = k.do(ctx)
	}
	res.Duration = time.Since(start).Seconds()
	res.Warnings = append(k.warnings, res.Warnings...)
	// The epilogue is over: a refresh the CLI wrote into the user's file, or a merge-back, is in
	// it now.
	k.red.refresh(true)
	if res.Isolation == "" {
		res.Isolation = k.iso
	}
	if res.AttemptIsolation == nil {
		res.AttemptIsolation = []sandbox.Isolation{}
	}
	if res.Enforcement == nil { // no attempt reached its executor
		res.Enforcement = k.prep.enforcementOf(res.Isolation, sandbox.Spec{}, sandbox.Exit{}, "")
	}
	// Every string of the result, at its level, with every secret the call learned (a diff can
	// carry a secret Cline wrote into a file, a file name can be one; the file on disk keeps it).
	return redactResult(res, k.red.redactor())
}

func (k *call) do(ctx context.Context) Result {
	if err := ctx.Err(); err != nil {
		return k.fail(cline.KindCancelled, "the call was cancelled before it started", false)
	}
	if k.iso.Container() && k.r.cfg.Docker == nil {
		hint := "start the Docker engine and build the image with `make image` — or `make image-fake` for tests"
		if le := (*sandbox.LaunchError)(nil); errors.As(k.r.cfg.DockerErr, &le) && le.Hint != "" {
			hint = le.Hint
		}
		return k.fail(cline.KindLaunchFailed, string(k.iso)+" isolation was requested but is unavailable: "+errText(k.r.cfg.DockerErr)+
			" ("+hint+"; the server never falls back to the host)", false)
	}
	if f := k.planSession(); f != nil {
		return k.fail(f.kind, f.msg, false)
	}
	release, err := k.waitTurn(ctx)
	if err != nil {
		return k.fail(cline.KindCancelled, err.Error(), false)
	}
	defer release()
	private, err := os.MkdirTemp(k.r.cfg.TempDir, "cline-mcp-call-")
	if err != nil {
		return k.fail(cline.KindLaunchFailed, fmt.Sprintf("create a private temp dir: %v", err), false)
	}
	k.prep.private = private
	untrack := func() {}
	if k.r.cfg.TrackDir != nil {
		untrack = k.r.cfg.TrackDir(private)
	}
	defer func() {
		if err := os.RemoveAll(private); err != nil {
			k.warnings = append(k.warnings, fmt.Sprintf("could not remove the private temp dir %s: %v", private, err))
			return
		}
		untrack()
	}()
	k.prep.space = k.r.workspaceFor(k.Call)
	dir, warns, f := k.prep.space.prepare(ctx, &k.res)
	k.warnings = append(k.warnings, warns...)
	if f != nil {
		return k.fail(f.kind, f.msg, false)
	}
	k.prep.dir = dir
	if p, ok := k.prep.space.(interface{ prompt(string) string }); ok {
		k.Prompt = p.prompt(k.Prompt) // review_cline: the task with the change under review
	}
	res, written := k.withSettings(ctx)
	k.recordSession(&res, k.prep.sess.id)
	ectx, cancel := epilogue(ctx)
	defer cancel()
	return k.prep.space.finish(ectx, res, written)
}

// waitTurn waits until the call may run: first, for apply_cline_edits, until no other apply on the
// same checkout runs — in this process (in arrival order) and, with CheckoutLocks, in any other
// cline-mcp process of the user — so each diff holds exactly its own run's changes (it waits without
// holding a slot, so it never blocks other work); then for one of the MaxConcurrent slots. A waiting
// call reports its position as progress. A cancel while waiting ends the call before anything
// started.
func (k *call) waitTurn(ctx context.Context) (func(), error) {
	release := func() {}
	if k.Tool == ApplyClineEdits {
		key := checkoutKey(k.Cwd)
		r, err := k.r.checkouts.acquire(ctx, key, func(pos int) {
			k.progress(fmt.Sprintf("queued, position %d: another apply_cline_edits on this checkout runs first", pos))
		})
		if err != nil {
			return nil, errors.New("the call was cancelled while it waited for another apply_cline_edits on the same checkout")
		}
		release = r
		if dir := k.r.cfg.CheckoutLocks; dir != "" {
			unlock, err := lockCheckout(ctx, dir, key, func() {
				k.progress("queued: another cline-mcp process runs apply_cline_edits on this checkout")
			})
			switch {
			case err != nil && ctx.Err() != nil:
				release()
				return nil, errors.New("the call was cancelled while it waited for another cline-mcp process's apply_cline_edits on the same checkout")
			case err != nil:
				k.warnings = append(k.warnings, fmt.Sprintf("applies of other cline-mcp processes on this checkout were not excluded: %v", err))
			default:
				inProcess := release
				release = func() { unlock(); inProcess() }
			}
		}
	}
	r, err := k.r.slots.acquire(ctx, func(pos int) {
		k.progress(fmt.Sprintf("queued, position %d: the server runs at most %d calls at once", pos, k.r.cfg.MaxConcurrent))
	})
	if err != nil {
		release()
		return nil, fmt.Errorf("the call was cancelled while it was queued (at most %d calls run at once)", k.r.cfg.MaxConcurrent)
	}
	return func() { r(); release() }, nil
}

// callSecrets is a new call's redactor. It knows the literal secrets of this moment — the server's
// environment (secret-named variables, and every variable named by --docker-env, whatever its
// name) — and watches the user's providers.json: its values now, and any refresh written to it
// during the call (read again when it changed; reading it is best effort).
func (r *Runner) callSecrets() *secrets {
	lits := redact.SecretsFromEnv(r.cfg.Env)
	getenv := envLookup(r.cfg.Env)
	for _, name := range r.cfg.DockerEnv {
		if v := getenv(name); v != "" {
			lits = append(lits, v)
		}
	}
	s := newSecrets(redact.New(lits))
	s.watch(r.cfg.Settings.File(), nil)
	return s
}

// fail builds a failure result carrying what the call knows so far.
func (k *call) fail(kind cline.Kind, msg string, retryable bool) Result {
	res := k.res
	res.OK = false
	res.Kind = string(kind)
	res.Message = msg
	res.Retryable = retryable
	return res
}

func errText(err error) string {
	if err == nil {
		return "not configured"
	}
	return err.Error()
}

// globalSettingsPath is where the user's own global-settings.json lives, as the CLI resolves it.
func (r *Runner) globalSettingsPath() string {
	getenv := envLookup(r.cfg.Env)
	if p := getenv("CLINE_GLOBAL_SETTINGS_PATH"); p != "" {
		return p
	}
	return filepath.Join(settings.DataDir(getenv, r.cfg.Home), "settings", "global-settings.json")
}

// envLookup reads a KEY=value list like os.Getenv; the last entry wins.
func envLookup(env []string) func(string) string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}
