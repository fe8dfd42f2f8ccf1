package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// The fakes of this file record every call into one shared event log, so a test asserts the
// order in which the runner used settings, git, worktrees and the executors.

type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	e.log = append(e.log, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.log)
}

// --- settings ---

type fakeSettings struct {
	ev       *events
	path     string // providers.json (the redactor reads it)
	beginErr error  // Begin fails with it (after waiting for ctx when blockBegin)
	// blockBegin makes Begin wait for ctx to end, like a merge-back holding the store.
	blockBegin bool
	copyErr    error
	endWarn    string // End's warning, when set
	// fresh and freshErr are what EnsureFresh returns.
	fresh    settings.Fresh
	freshErr error

	mu     sync.Mutex
	copies []*settings.Copy // in the order they were made
	closed map[*settings.Copy]bool
	holds  map[*settings.Run]bool // begun → ended
}

func (s *fakeSettings) File() string { return s.path }

func (s *fakeSettings) Begin(ctx context.Context) (*settings.Run, []string, error) {
	s.ev.add("settings.Begin")
	if s.blockBegin {
		<-ctx.Done()
		return nil, nil, fmt.Errorf("%w: %w", settings.ErrCancelled, ctx.Err())
	}
	if s.beginErr != nil {
		return nil, nil, s.beginErr
	}
	h := &settings.Run{}
	s.mu.Lock()
	if s.holds == nil {
		s.holds = map[*settings.Run]bool{}
	}
	s.holds[h] = false
	s.mu.Unlock()
	return h, []string{"begin warning"}, nil
}

func (s *fakeSettings) End(ctx context.Context, h *settings.Run) []string {
	s.ev.add("hold.End")
	s.mu.Lock()
	defer s.mu.Unlock()
	if ended, ok := s.holds[h]; !ok || ended {
		panic("hold ended twice, or not begun")
	}
	s.holds[h] = true
	if s.endWarn != "" {
		return []string{s.endWarn}
	}
	return nil
}

func (s *fakeSettings) HostCopy(dstRoot string, ov settings.Override) (*settings.Copy, error) {
	return s.newCopy("HostCopy", dstRoot, ov)
}

func (s *fakeSettings) PrivateCopy(dstRoot string, ov settings.Override) (*settings.Copy, error) {
	return s.newCopy("PrivateCopy", dstRoot, ov)
}

func (s *fakeSettings) newCopy(kind, dstRoot string, ov settings.Override) (*settings.Copy, error) {
	s.ev.add("settings.%s", kind)
	if s.copyErr != nil {
		return nil, s.copyErr
	}
	dir, err := os.MkdirTemp(dstRoot, "copy-")
	if err != nil {
		return nil, err
	}
	sp := filepath.Join(dir, "settings", "providers.json")
	if err := os.MkdirAll(filepath.Dir(sp), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(sp, []byte(`{"providers":{}}`), 0o600); err != nil {
		return nil, err
	}
	target := ov.Provider
	if target == "" {
		target = "cline"
	}
	c := &settings.Copy{Dir: dir, SettingsPath: sp, Target: target}
	s.mu.Lock()
	s.copies = append(s.copies, c)
	s.mu.Unlock()
	return c, nil
}

func (s *fakeSettings) ReadBack(c *settings.Copy) ([]byte, error) { return os.ReadFile(c.SettingsPath) }

func (s *fakeSettings) Discard(c *settings.Copy) error {
	s.ev.add("copy.Close")
	s.mu.Lock()
	if s.closed == nil {
		s.closed = map[*settings.Copy]bool{}
	}
	s.closed[c] = true
	s.mu.Unlock()
	return os.RemoveAll(c.Dir)
}

func (s *fakeSettings) EnsureFresh(ctx context.Context, ov settings.Override, until time.Time, under *settings.Run) (settings.Fresh, error) {
	s.ev.add("%s.EnsureFresh", holder(under))
	return s.fresh, s.freshErr
}

func (s *fakeSettings) MergeAllowed(ctx context.Context, c *settings.Copy, under *settings.Run) []string {
	s.ev.add("%s.MergeAllowed", holder(under))
	return nil
}

// holder names who a settings write waits for in the event log: the call's own hold, or the store.
func holder(under *settings.Run) string {
	if under != nil {
		return "hold"
	}
	return "settings"
}

// open reports copies not closed and holds not ended.
func (s *fakeSettings) open() (copies, holds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.copies {
		if !s.closed[c] {
			copies++
		}
	}
	for _, ended := range s.holds {
		if !ended {
			holds++
		}
	}
	return copies, holds
}

// --- git ---

type fakeGit struct {
	ev          *events
	before      git.Evidence
	evidenceErr error
	// inspect answers each Inspect in turn (the last one repeats); nil: the evidence before.
	inspect []func(ctx context.Context) (git.Evidence, error)
	change  git.Change
	// compareErr fails Compare; compareCtx records whether Compare's ctx was still live.
	compareErr error
	top        string
	topErr     error

	mu           sync.Mutex
	inspections  int
	compareAlive bool
}

func (g *fakeGit) Evidence(ctx context.Context, dir string) (git.Evidence, error) {
	g.ev.add("git.Evidence")
	return g.before, g.evidenceErr
}

func (g *fakeGit) Inspect(ctx context.Context, before git.Evidence) (git.Evidence, error) {
	g.ev.add("git.Inspect")
	g.mu.Lock()
	n := g.inspections
	g.inspections++
	g.mu.Unlock()
	if len(g.inspect) == 0 {
		return before, nil
	}
	return g.inspect[min(n, len(g.inspect)-1)](ctx)
}

func (g *fakeGit) Compare(ctx context.Context, before, after git.Evidence) (git.Change, error) {
	g.ev.add("git.Compare")
	g.mu.Lock()
	g.compareAlive = ctx.Err() == nil
	g.mu.Unlock()
	return g.change, g.compareErr
}

func (g *fakeGit) ReviewOf(ctx context.Context, r git.Repo, target, rev string, maxPatch int) (git.Review, error) {
	return git.Review{}, errors.New("fakeGit: no reviews")
}

func (g *fakeGit) TopLevel(ctx context.Context, dir string) (string, error) {
	g.ev.add("git.TopLevel")
	if g.topErr != nil {
		return "", g.topErr
	}
	return g.top, nil
}

func (g *fakeGit) Open(ctx context.Context, dir string) (git.Repo, error) {
	g.ev.add("git.Open")
	return git.Repo{}, fmt.Errorf("open %s: %w", dir, git.ErrNotGit)
}

// --- worktrees ---

type fakeWorktrees struct {
	ev         *events
	info       WorktreeInfo
	acquireErr error
	// blockAcquire makes Acquire wait for ctx to end, then fail.
	blockAcquire bool
	touched      []git.FileChange
	released     worktree.Released
	releaseErr   error

	mu           sync.Mutex
	leased       int  // acquired and not released
	releaseAlive bool // Release's ctx was live
}

func (w *fakeWorktrees) Acquire(ctx context.Context, repoDir string) (Worktree, error) {
	w.ev.add("wt.Acquire")
	if w.blockAcquire {
		<-ctx.Done()
		return nil, fmt.Errorf("worktree add: %w", ctx.Err())
	}
	if w.acquireErr != nil {
		return nil, w.acquireErr
	}
	w.mu.Lock()
	w.leased++
	w.mu.Unlock()
	return &fakeWorktree{w: w}, nil
}

func (w *fakeWorktrees) AcquireAt(ctx context.Context, repoDir, commit string) (Worktree, error) {
	w.ev.add("wt.AcquireAt %s", commit)
	return w.Acquire(ctx, repoDir)
}

type fakeWorktree struct{ w *fakeWorktrees }

func (l *fakeWorktree) Info() WorktreeInfo { return l.w.info }

func (l *fakeWorktree) Touched(ctx context.Context) ([]git.FileChange, error) {
	l.w.ev.add("wt.Touched")
	return l.w.touched, nil
}

func (l *fakeWorktree) Release(ctx context.Context) (worktree.Released, error) {
	l.w.ev.add("wt.Release")
	l.w.mu.Lock()
	l.w.leased--
	l.w.releaseAlive = ctx.Err() == nil
	l.w.mu.Unlock()
	return l.w.released, l.w.releaseErr
}

// --- the CLI ---

// step is one scripted CLI run: what it writes, how it ends.
type step struct {
	stdout, stderr string
	exit           sandbox.Exit
	err            error // the run could not start
	errAfter       error // the run happened, then the executor failed (a copy back)
	// hang writes stdout, then waits for ctx to end and reports the executor's stop.
	hang bool
	// before runs when the step starts (to cancel, or to wait for a test's signal).
	before func(ctx context.Context)
}

// fakeCLI serves both executors from one script, in the order of their Run calls.
type fakeCLI struct {
	t     *testing.T
	ev    *events
	mu    sync.Mutex
	steps []step
	specs []sandbox.Spec
}

type fakeExec struct {
	cli  *fakeCLI
	name string
}

func (f *fakeCLI) exec(name string) sandbox.Executor { return &fakeExec{cli: f, name: name} }

func (f *fakeCLI) runs() []sandbox.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.specs)
}

func (e *fakeExec) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Exit, error) {
	f := e.cli
	f.ev.add("%s.Run", e.name)
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	if len(f.steps) == 0 {
		f.mu.Unlock()
		f.t.Errorf("%s.Run: no scripted step left", e.name)
		return sandbox.Exit{}, errors.New("no scripted step")
	}
	s := f.steps[0]
	f.steps = f.steps[1:]
	f.mu.Unlock()
	if s.before != nil {
		s.before(ctx)
	}
	if s.err != nil {
		return sandbox.Exit{}, s.err
	}
	_, _ = io.WriteString(spec.Stdout, s.stdout)
	_, _ = io.WriteString(spec.Stderr, s.stderr)
	if s.errAfter != nil {
		return s.exit, s.errAfter
	}
	if s.hang {
		start := time.Now()
		<-ctx.Done()
		return sandbox.Exit{Code: -1, Signal: "SIGKILL", Stopped: true, Duration: time.Since(start)}, nil
	}
	return s.exit, nil
}

// --- recordings of the real CLI (bridge/cline/testdata/recordings) ---

var (
	exitCodeLine = regexp.MustCompile(`(?m)^exit_code=(-?\d+)`)
	signalLine   = regexp.MustCompile(`(?m)^signal=(SIG[A-Z]+)`)
)

// recorded is the step that replays a recording: its stdout, stderr and exit code.
func recorded(t *testing.T, name string) step {
	t.Helper()
	dir := filepath.Join("..", "cline", "testdata", "recordings", name)
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	s := step{stdout: read("stdout.jsonl"), stderr: read("stderr.txt")}
	exit := read("exit.txt")
	switch m, sig := exitCodeLine.FindStringSubmatch(exit), signalLine.FindStringSubmatch(exit); {
	case m != nil:
		s.exit.Code, _ = strconv.Atoi(m[1])
	case sig != nil:
		s.exit.Code, s.exit.Signal = -1, sig[1]
	default:
		t.Fatalf("%s: neither exit code nor signal", name)
	}
	s.exit.Duration = time.Second
	return s
}

// editsThenRateLimit is a run that made two successful edits, then hit a rate limit: the first
// 17 lines of b_edit_autoapprove_true, then the error and result lines of c_http_429.
func editsThenRateLimit(t *testing.T) step {
	edit, limit := recorded(t, "b_edit_autoapprove_true"), recorded(t, "c_http_429")
	head := strings.SplitAfter(edit.stdout, "\n")[:17]
	tail := strings.SplitAfter(limit.stdout, "\n")[2:]
	limit.stdout = strings.Join(head, "") + strings.Join(tail, "")
	return limit
}

// hang is a run that starts and never finishes (the first lines of f_hang_timeout_5s).
func hang(t *testing.T) step {
	s := recorded(t, "f_hang_timeout_5s")
	s.hang = true
	return s
}

func pong(t *testing.T) step        { return recorded(t, "a_text_pong") }
func rateLimited(t *testing.T) step { return recorded(t, "c_http_429") }
