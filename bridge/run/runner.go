// Package run owns one tool call from plan to result: wait for its turn (at most MaxConcurrent calls
// run at once, in arrival order; apply_cline_edits calls on one checkout one at a time), pick the
// isolation, prepare the workspace (git evidence or a disposable worktree) and the settings (the
// user's file for a default host run, a private copy otherwise), run attempts under the seed's retry
// policy, and always run the host-side epilogue (settings repair or merge-back, diff and commit check,
// worktree and temp-dir removal) — also after a failure or cancel.
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
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
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
	// DockerEgress is the executor's egress mode (EgressProvider, EgressNone, EgressOpen):
	// in provider mode each run's spec names its provider's endpoints; open runs get a warning.
	// EgressAllow are the endpoints the server allows every run (--egress-allow).
	DockerEgress string
	EgressAllow  []string

	Floor          sandbox.Isolation
	RetryIsolation sandbox.Isolation // "" = retries use the first attempt's isolation

	// Env is the server's environment, the base of the child's.
	Env  []string
	Home string

	// Settings is the user's providers.json (StoreSettings), Git the host-side git (*worktree.Git),
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

	// SeedPolicy runs analysis tools exactly as the seed did (--auto-approve false), which
	// denies every tool, reading included.
	SeedPolicy bool
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
	slots     slots      // MaxConcurrent
	checkouts keyedSlots // apply_cline_edits, per checkout
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
	return &Runner{cfg: cfg, log: cfg.Logger, slots: slots{limit: cfg.MaxConcurrent}}, nil
}

// call is the state of one Do: the plan, what the prologue prepared, and what the epilogue
// must undo.
type call struct {
	Call
	r        *Runner
	progress Progress
	start    time.Time
	red      *redact.Redactor
	iso      sandbox.Isolation // first attempt's isolation
	dir      string            // where Cline runs (cwd, checkout root's cwd, or the worktree)
	repo     *worktree.Repo    // the checkout or worktree as recorded before the first attempt (nil: none yet)
	private  string            // private 0700 temp dir of this call (global settings, copies)
	hold     SettingsHold      // a default host run's shared hold on the settings (nil: none)
	res      Result
	warnings []string
	// learned are credential values the call learned while it ran — the tokens of a host refresh
	// before a container run (settings.Fresh.Secrets) and whatever the run's settings copy held
	// afterwards (SettingsCopy.Secrets) — which everything the call returns must be redacted of.
	learned []string
	// mayHaveWritten is set when an attempt could have changed files: it ran in a container
	// (where analysis keeps run_commands) or reported a successful mutating tool call.
	mayHaveWritten bool
	// once-per-call warnings of the analysis tool policy (policy.go)
	userCodeWarned, textLinkWarned, versionWarned, openWarned bool
}

// Do runs one validated call to its result. It never panics on user input and never returns
// before everything it started is stopped and cleaned up.
func (r *Runner) Do(ctx context.Context, c Call, progress Progress) Result {
	if progress == nil {
		progress = func(string) {}
	}
	k := &call{Call: c, r: r, progress: progress, start: time.Now()}
	k.iso = c.Isolation
	if k.iso == "" || !k.iso.AtLeast(r.cfg.Floor) {
		k.iso = r.cfg.Floor
	}
	k.red = r.redactor()
	res := k.do(ctx)
	res.Duration = time.Since(k.start).Seconds()
	// Diagnostics (warnings, messages; the tails were redacted while streaming) get the thorough
	// level; the answer and the diff get the precise level, which changes only known secret
	// values and credential shapes, never code that merely names a password or token.
	res.Warnings = k.redactAll(append(k.warnings, res.Warnings...))
	res.Message = k.red.String(res.Message)
	res.Text = k.red.Text(res.Text)
	if res.Diff != nil {
		// A diff can carry a secret Cline wrote into a file (.env, config); it leaves the machine
		// like every other field, so it is redacted too. The file on disk keeps it.
		d := k.red.Text(*res.Diff)
		res.Diff = &d
	}
	if res.Git != nil {
		// The git error of an apply's evidence (a git process's stderr) leaves in the git
		// report beside the message that repeats it; both are diagnostics.
		res.Git.Error = k.red.String(res.Git.Error)
	}
	if res.Isolation == "" {
		res.Isolation = k.iso
	}
	if res.AttemptIsolation == nil {
		res.AttemptIsolation = []sandbox.Isolation{}
	}
	return res
}

func (k *call) do(ctx context.Context) Result {
	if err := ctx.Err(); err != nil {
		return k.fail(cline.KindCancelled, "the call was cancelled before it started", false)
	}
	if k.iso == sandbox.IsolationDocker && k.r.cfg.Docker == nil {
		hint := "start the Docker engine and build the image with `make image` — or `make image-fake` for tests"
		if le := (*sandbox.LaunchError)(nil); errors.As(k.r.cfg.DockerErr, &le) && le.Hint != "" {
			hint = le.Hint
		}
		return k.fail(cline.KindLaunchFailed, "Docker isolation was requested but is unavailable: "+errText(k.r.cfg.DockerErr)+
			" ("+hint+"; the server never falls back to the host)", false)
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
	k.private = private
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
	switch k.Tool {
	case ApplyClineEdits:
		return k.apply(ctx)
	case AskClineWorkspace:
		return k.workspace(ctx)
	default:
		k.dir = k.Cwd
		return k.withSettings(ctx, nil)
	}
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

// redactor knows the literal secrets of this moment: the server's environment (secret-named
// variables, and every variable named by --docker-env, whatever its name) and the values in the
// user's providers.json. Reading the file is best effort.
func (r *Runner) redactor() *redact.Redactor {
	lits := redact.SecretsFromEnv(r.cfg.Env)
	getenv := envLookup(r.cfg.Env)
	for _, name := range r.cfg.DockerEnv {
		if v := getenv(name); v != "" {
			lits = append(lits, v)
		}
	}
	if b, err := os.ReadFile(r.cfg.Settings.Path()); err == nil {
		lits = append(lits, redact.SecretsFromJSON(b)...)
	}
	return redact.New(lits)
}

func (k *call) redactAll(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, k.red.String(s))
	}
	return out
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
