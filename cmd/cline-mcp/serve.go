package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/mcpserver"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/docker"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"github.com/cline-mcp/cline-mcp/sandbox/host"
	"github.com/cline-mcp/cline-mcp/sandbox/kubernetes"
	"github.com/cline-mcp/cline-mcp/sandbox/lifeline"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// serve runs the stdio MCP server until stdin closes or a signal arrives, then lets in-flight
// calls finish their cleanup.
func serve(ctx context.Context, cfg *config, log *slog.Logger, stdin io.Reader, stdout io.Writer) int {
	if cfg.service.addr != "" {
		return serveHTTP(ctx, cfg, log)
	}
	// A client that died closes our stdout: a write to it must fail (EPIPE, logged), not kill
	// the server with SIGPIPE halfway through stopping Cline and merging settings back for the
	// calls still running.
	signal.Ignore(syscall.SIGPIPE)
	b, err := startBackend(ctx, cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	defer b.cleanup()
	srv := mcpserver.New(mcpserver.Options{
		Version:   currentVersion(),
		Runner:    b.runner,
		Floor:     sandbox.Isolation(cfg.isolation),
		Logger:    log,
		Heartbeat: cfg.heartbeat,
		Sessions:  b.sessions,
		Jobs:      b.jobs,

		ResultMaxChars: cfg.resultMax,
		AskUser:        cfg.askCommands,
	})
	log.Info("serving MCP on stdio", "version", currentVersion(), "isolation", cfg.isolation, "pid", os.Getpid())
	err = srv.Serve(ctx, stdin, stdout)
	// Background jobs end with the session: cancelled, after their runs' cleanup.
	stopCtx, stopCancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	b.jobs.Stop(stopCtx)
	stopCancel()
	if err != nil && ctx.Err() == nil {
		log.Error("stdio session ended", "err", err)
		return 1
	}
	log.Info("stdio session closed")
	return 0
}

// backend is what either transport serves: the runner and the job and session stores; cleanup
// stops the runner's executors and sweepers.
type backend struct {
	runner   *run.Runner
	jobs     *jobs.Store
	sessions *sessions.Store
	cleanup  func()
}

func startBackend(ctx context.Context, cfg *config, log *slog.Logger) (backend, error) {
	js, err := jobStore(cfg, log)
	if err != nil {
		return backend{}, err
	}
	sess, err := sessionStore(cfg)
	if err != nil {
		return backend{}, err
	}
	runner, cleanup, err := buildRunner(ctx, cfg, log, sess)
	if err != nil {
		return backend{}, err
	}
	return backend{runner: runner, jobs: js, sessions: sess, cleanup: cleanup}, nil
}

// buildRunner wires executors, settings, git and the runner, and starts the sweepers that
// remove leftovers of a crashed earlier server (our worktrees, our containers).
func buildRunner(ctx context.Context, cfg *config, log *slog.Logger, sess *sessions.Store) (*run.Runner, func(), error) {
	life := startLifeline(cfg, log)
	gitCLI := &git.Git{}
	wts := &worktree.Manager{Git: gitCLI, Root: worktreeRoot(cfg.worktreeRoot), PoolSize: cfg.pool, PoolIdle: cfg.poolIdle,
		Log: log.With("component", "worktree-pool")}
	rc := runConfig(cfg, log, life, gitCLI, wts, sess)
	if cfg.backoff > 0 {
		b := cfg.backoff
		rc.Backoff = func() time.Duration { return b }
	}
	var sweepDocker func(context.Context) (int, error)
	var dock *docker.Executor
	var kube *kubernetes.Executor
	if rc.Container == sandbox.IsolationKubernetes {
		// client-go's own messages (klog) go to the server's log, not in klog's format to stderr.
		kubernetes.SetLogger(log.With("component", "client-go"))
		k8s, where, err := newKubernetes(cfg, trackPods(life))
		if err != nil {
			rc.DockerErr = err
			log.Warn("kubernetes isolation unavailable; calls that need it fail with launch_failed", "err", err)
		} else {
			kube, rc.Docker, sweepDocker = k8s, k8s, sweepKubernetes(k8s)
			log.Info("kubernetes cluster", "from", where, "image", cfg.k8s.image)
		}
	} else if d, derr := newDocker(cfg, docker.WithTrack(func(id string) func() { return life.Track(lifeline.Container, id) })); derr != nil {
		rc.DockerErr = derr
		log.Warn("docker isolation unavailable; calls that need it fail with launch_failed", "err", derr)
	} else {
		dock, rc.Docker, sweepDocker = d, d, d.Sweep
		ep := d.Endpoint()
		log.Info("docker engine", "host", ep.Host, "from", ep.Source, "mounts", cfg.dockerMounts)
	}
	runner, err := run.New(rc)
	if err != nil {
		return nil, nil, err
	}
	sweepCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sweep(sweepCtx, log, wts, sweepDocker)
	}()
	stopExpiry := expireSessions(ctx, runner, log)
	return runner, func() {
		cancel()
		<-done
		stopExpiry()
		// The calls are over: worktrees kept for sessions and the pool's idle ones go now (Close
		// also waits for expiries).
		runner.Close(context.WithoutCancel(ctx))
		if err := wts.Close(context.WithoutCancel(ctx)); err != nil {
			log.Warn("pooled worktrees not removed", "err", err)
		}
		if dock != nil {
			_ = dock.Close()
		}
		if kube != nil {
			// The warm pods go before the lifeline that tracks them.
			kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			if err := kube.Close(kctx); err != nil {
				log.Warn("warm pods not removed", "err", err)
			}
			kcancel()
		}
		if err := life.Close(10 * time.Second); err != nil {
			log.Warn("lifeline", "err", err)
		}
	}, nil
}

// runConfig is the runner's configuration from the flags and the environment.
func runConfig(cfg *config, log *slog.Logger, life *lifeline.Lifeline, gitCLI *git.Git, wts *worktree.Manager, sess *sessions.Store) run.Config {
	home, _ := os.UserHomeDir()
	providers := settings.Path(os.Getenv, home)
	// The host refresh before a container run reads CLINE_API_BASE_URL and CLINE_ENVIRONMENT from
	// the server's environment, as the CLI does.
	store := &settings.Store{FS: afero.NewOsFs(), Path: providers, LockPath: settings.LockPath(providers),
		OAuth: settings.OAuth{Getenv: os.Getenv}}
	return run.Config{
		ClinePath:      run.ClineResolver(cfg.cline, os.Getenv, runtime.GOOS),
		Host:           &host.Executor{Track: life.TrackGroup},
		TrackDir:       func(p string) func() { return life.Track(lifeline.Dir, p) },
		DockerCline:    cfg.dockerCline,
		DockerEnv:      cfg.dockerEnv,
		DockerEgress:   sandbox.EgressMode(cfg.dockerEgress),
		EgressAllow:    cfg.egressAllow,
		Instance:       docker.InstanceID(),
		Floor:          sandbox.Isolation(cfg.isolation),
		RetryIsolation: sandbox.Isolation(cfg.retryIsolation),
		Container:      cfg.container(),
		Env:            os.Environ(),
		Home:           home,
		Settings:       store,
		MaxConcurrent:  cfg.maxConcurrent,
		CheckoutLocks:  checkoutLocks(),
		Git:            gitCLI,
		Worktrees:      run.ManagedWorktrees(wts),
		SeedPolicy:     cfg.analysisPolicy == "seed",
		AskCommands:    cfg.askCommands,
		AskTimeout:     cfg.askTimeout,
		Protocol:       run.Protocol(cfg.protocol),
		Sessions:       sess,
		WarmAgents:     cfg.warmAgents,
		Spares:         cfg.spares(),
		MaxCostUSD:     cfg.maxCost,
		MaxIterations:  cfg.maxIterations,
		WarmIdle:       cfg.warmIdle,
		StopGrace:      cfg.stopGrace,
		Logger:         log,
	}
}

// sweep ends what a crashed server left behind: worktrees, Cline processes and containers.
func sweep(sweepCtx context.Context, log *slog.Logger, wts *worktree.Manager, sweepDocker func(context.Context) (int, error)) {
	{
		if removed, err := wts.Sweep(sweepCtx); err != nil {
			log.Warn("worktree sweep", "err", err)
		} else if len(removed) > 0 {
			log.Info("removed worktrees left by a crashed server", "paths", removed)
		}
		hostname, _ := os.Hostname()
		if killed, err := host.SweepOrphans(func(id string) bool { return proc.DeadOnHost(id, hostname) }); err != nil {
			log.Warn("process sweep", "err", err)
		} else if len(killed) > 0 {
			log.Info("ended Cline processes left running by a crashed server", "pids", killed)
		}
		if sweepDocker != nil {
			if n, err := sweepDocker(sweepCtx); err != nil {
				log.Warn("container sweep", "err", err)
			} else if n > 0 {
				log.Info("removed containers left by a crashed server", "count", n)
			}
		}
	}
}

// sessionStore is the session store of --sessions-dir (default <user cache dir>/cline-mcp/sessions).
func sessionStore(cfg *config) (*sessions.Store, error) {
	dir := cfg.sessionsDir
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no directory for sessions (pass --sessions-dir): %w", err)
		}
		dir = filepath.Join(cache, "cline-mcp", "sessions")
	}
	dir, _ = filepath.Abs(dir)
	return &sessions.Store{Dir: dir, Idle: cfg.sessionIdle}, nil
}

// jobStore is the job store of --jobs-dir (default <user cache dir>/cline-mcp/jobs); it marks the
// jobs of servers that died failed and removes expired ones.
func jobStore(cfg *config, log *slog.Logger) (*jobs.Store, error) {
	dir := cfg.jobsDir
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no directory for jobs (pass --jobs-dir): %w", err)
		}
		dir = filepath.Join(cache, "cline-mcp", "jobs")
	}
	dir, _ = filepath.Abs(dir)
	hostname, _ := os.Hostname()
	s := &jobs.Store{Dir: dir, Owner: docker.InstanceID(), MaxRun: cfg.jobMax, Idle: cfg.jobIdle, Keep: cfg.jobKeep,
		Dead: func(owner string) bool { return proc.DeadOnHost(owner, hostname) }}
	marked, removed, bad := s.Recover(time.Now())
	if marked > 0 || removed > 0 {
		log.Info("jobs of servers that stopped marked failed, expired jobs removed", "failed", marked, "removed", removed)
	}
	for _, b := range bad {
		log.Warn("unreadable job record skipped", "err", b)
	}
	return s, nil
}

// expireSessions ends idle sessions now and every minute until the returned stop is called.
func expireSessions(ctx context.Context, runner *run.Runner, log *slog.Logger) (stop func()) {
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			if n := runner.Expire(ectx); n > 0 {
				log.Info("ended idle sessions", "count", n)
			}
			select {
			case <-ectx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// startLifeline starts the watchdog that ends this server's Cline processes and containers if
// the server dies without cleaning up (SIGKILL, out of memory). Not on Windows, where each run's
// Job Object already dies with the server (and Docker isolation is refused). Without it the
// server still works; leftovers are then only swept by the next server's start.
func startLifeline(cfg *config, log *slog.Logger) *lifeline.Lifeline {
	if runtime.GOOS == "windows" || slices.Contains(os.Environ(), watchdogEnvMark) {
		return nil
	}
	exe, err := os.Executable()
	if err == nil {
		argv := append([]string{exe, watchdogCommand, "--instance", docker.InstanceID(), "--"}, cfg.args...)
		var life *lifeline.Lifeline
		if life, err = lifeline.Start(argv, watchdogEnv(os.Environ()), os.Stderr); err == nil {
			log.Debug("lifeline watchdog started", "pid", life.Pid())
			return life
		}
	}
	log.Warn("no lifeline watchdog: if this server is killed, its Cline processes and containers run on until the next server start sweeps them", "err", err)
	return nil
}

// checkoutLocks is where apply_cline_edits calls of every cline-mcp process of the user lock their
// checkout: <user cache dir>/cline-mcp/checkout-locks ("" when the OS names no cache dir).
func checkoutLocks() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "cline-mcp", "checkout-locks")
}

// worktreeRoot is --worktree-root, else $TMPDIR/cline-mcp-worktrees, with the existing part of the
// path resolved through symlinks: worktrees are mounted into containers at their own paths, and
// git reports them resolved (on macOS $TMPDIR lies under /var → /private/var).
func worktreeRoot(flagValue string) string {
	root := flagValue
	if root == "" {
		root = filepath.Join(os.TempDir(), worktree.DefaultRootName)
	}
	root, _ = filepath.Abs(root)
	if r, err := filepath.EvalSymlinks(root); err == nil {
		return r
	}
	if parent, err := filepath.EvalSymlinks(filepath.Dir(root)); err == nil {
		return filepath.Join(parent, filepath.Base(root))
	}
	return root
}
