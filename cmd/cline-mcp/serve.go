package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/afero"

	"github.com/cline-mcp/cline-mcp/bridge/mcpserver"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/host"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// serve runs the stdio MCP server until stdin closes or a signal arrives, then lets in-flight
// calls finish their cleanup.
func serve(ctx context.Context, cfg *config, log *slog.Logger, stdin io.Reader, stdout io.Writer) int {
	runner, cleanup, err := buildRunner(ctx, cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	defer cleanup()
	srv := mcpserver.New(mcpserver.Options{
		Version:   version,
		Runner:    runner,
		Floor:     sandbox.Isolation(cfg.isolation),
		Logger:    log,
		Heartbeat: cfg.heartbeat,
	})
	log.Info("serving MCP on stdio", "version", version, "isolation", cfg.isolation, "pid", os.Getpid())
	err = srv.Serve(ctx, stdin, stdout)
	if err != nil && ctx.Err() == nil {
		log.Error("stdio session ended", "err", err)
		return 1
	}
	log.Info("stdio session closed")
	return 0
}

// buildRunner wires executors, settings, git and the runner, and starts the sweepers that
// remove leftovers of a crashed earlier server (our worktrees, our containers).
func buildRunner(ctx context.Context, cfg *config, log *slog.Logger) (*run.Runner, func(), error) {
	home, _ := os.UserHomeDir()
	env := os.Environ()
	git := &worktree.Git{}
	wts := &worktree.Manager{Git: git, Root: worktreeRoot(cfg.worktreeRoot)}
	store := &settings.Store{FS: afero.NewOsFs(), Path: settings.Path(os.Getenv, home)}
	rc := run.Config{
		ClinePath:      run.ClineResolver(cfg.cline, os.Getenv, runtime.GOOS),
		Host:           host.New(),
		DockerCline:    cfg.dockerCline,
		DockerEnv:      cfg.dockerEnv,
		Floor:          sandbox.Isolation(cfg.isolation),
		RetryIsolation: sandbox.Isolation(cfg.retryIsolation),
		Env:            env,
		Home:           home,
		Settings:       store,
		Lock:           &settings.RWLock{},
		Git:            git,
		Worktrees:      wts,
		SeedPolicy:     cfg.analysisPolicy == "seed",
		StopGrace:      cfg.stopGrace,
		Logger:         log,
	}
	if cfg.backoff > 0 {
		b := cfg.backoff
		rc.Backoff = func() time.Duration { return b }
	}
	var sweepDocker func(context.Context) (int, error)
	dock, derr := newDocker(cfg)
	if derr != nil {
		rc.DockerErr = derr
		log.Warn("docker isolation unavailable; calls that need it fail with launch_failed", "err", derr)
	} else {
		rc.Docker = dock
		sweepDocker = dock.Sweep
		ep := dock.Endpoint()
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
		if removed, err := wts.Sweep(sweepCtx); err != nil {
			log.Warn("worktree sweep", "err", err)
		} else if len(removed) > 0 {
			log.Info("removed worktrees left by a crashed server", "paths", removed)
		}
		if sweepDocker != nil {
			if n, err := sweepDocker(sweepCtx); err != nil {
				log.Warn("container sweep", "err", err)
			} else if n > 0 {
				log.Info("removed containers left by a crashed server", "count", n)
			}
		}
	}()
	return runner, func() {
		cancel()
		<-done
		if dock != nil {
			_ = dock.Close()
		}
	}, nil
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
