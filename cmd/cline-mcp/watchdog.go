package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/docker"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"github.com/cline-mcp/cline-mcp/sandbox/host"
	"github.com/cline-mcp/cline-mcp/sandbox/lifeline"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// watchdogCommand is the internal `cline-mcp watchdog` command the server starts once (see
// sandbox/lifeline): it waits for the server's lifeline to close, then ends the Cline process
// groups and containers still running for that server, removes its private directories and —
// when the server died rather than exited — the worktrees of owners that are gone.
const watchdogCommand = "watchdog"

// watchdog runs `cline-mcp watchdog --instance ID -- <the server's flags>`. The server's flags
// give it the same Docker settings; it writes only to stderr.
func watchdog(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("cline-mcp watchdog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	instance := fs.String("instance", "", "instance id of the server whose leftovers to end")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := &config{}
	sfs := newFlags(stderr)
	cfg.register(sfs)
	if err := sfs.Parse(fs.Args()); err != nil || *instance == "" {
		fmt.Fprintln(stderr, "cline-mcp watchdog: want --instance ID -- <server flags>")
		return 2
	}
	log, closeLog, err := cfg.logger(stderr)
	if err != nil {
		return 2
	}
	defer closeLog()
	log = log.With("component", "watchdog", "instance", *instance)
	// Only the lifeline may end this process: not a Ctrl-C or a SIGTERM meant for the server.
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)

	left := lifeline.Watch(os.NewFile(lifeline.FD, "lifeline"))
	orderly := left[lifeline.Orderly] != nil
	delete(left, lifeline.Orderly)
	if orderly && len(left) == 0 {
		return 0 // an orderly shutdown: the server cleaned up after itself
	}
	if !orderly {
		// Said first and at warn level: a review killed in CI prints nothing itself, and this
		// shares its stderr.
		log.Warn("cline-mcp ended without cleaning up (killed, out of memory or crashed); ending what it left running", "pid", instancePID(*instance))
	}
	reap(left, log, func(ctx context.Context) (int, error) {
		if cfg.container() == sandbox.IsolationKubernetes {
			return removeKubernetes(ctx, cfg, *instance)
		}
		ex, err := newDocker(cfg, docker.WithInstanceID(*instance))
		if err != nil {
			return 0, err
		}
		defer ex.Close()
		return ex.RemoveOwn(ctx)
	})
	if !orderly {
		waitServerGone(*instance, serverExitWait)
		sweepWorktrees(cfg, log)
	}
	return 0
}

// sweepWorktrees removes the worktrees of owners that no longer run — the dead server's among
// them (git registration included): worktrees are not on the lifeline, and a killed review
// would otherwise leave its worktree until the next server starts.
func sweepWorktrees(cfg *config, log *slog.Logger) {
	wts := &worktree.Manager{Git: &git.Git{}, Root: worktreeRoot(cfg.worktreeRoot)}
	removed, err := wts.Sweep(context.Background())
	if err != nil {
		log.Warn("worktree sweep", "err", err)
	}
	log.Info("removed the worktrees of owners that are gone", "count", len(removed))
}

// serverExitWait bounds how long the watchdog waits for the dead server's process to be gone.
const serverExitWait = 10 * time.Second

// waitServerGone waits until the server of instance id runs no more (exited, or a zombie), at most
// limit. The lifeline closes while the exiting process closes its files, a moment before the
// process itself is gone; the worktree sweep judges owners by their process, and would keep the
// dead server's worktree as in use.
func waitServerGone(id string, limit time.Duration) {
	in, ok := proc.ParseInstance(id)
	if !ok || in.Host != proc.Self().Host {
		return
	}
	for end := time.Now().Add(limit); !proc.Gone(in.PID, in.Start) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
}

// instancePID is the pid in an instance id (0 when it is not one).
func instancePID(id string) int {
	in, _ := proc.ParseInstance(id)
	return in.PID
}

// reap ends what a dead server left running: process groups first (a run keeps spending tokens
// and editing files), then containers, then private directories (settings copies hold keys).
func reap(left map[string][]string, log *slog.Logger, removeContainers func(context.Context) (int, error)) {
	var killed []int
	for _, g := range left[lifeline.Group] {
		// The identity is re-checked right before the kill: the pid may be somebody else's now.
		pgid, err := lifeline.GroupToKill(g)
		if err == nil {
			err = host.KillGroup(pgid)
		}
		if err != nil {
			log.Warn("kill process group", "pgid", g, "err", err)
			continue
		}
		killed = append(killed, pgid)
	}
	containers := 0
	if len(left[lifeline.Container]) > 0 {
		// A create the server sent just before it died may land after the first sweep (the
		// engine ends a request whose client is gone): swept once more when it has had time.
		for i, pause := range []time.Duration{0, lateCreate} {
			time.Sleep(pause)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			n, err := removeContainers(ctx)
			cancel()
			if err != nil {
				log.Warn("remove containers", "sweep", i+1, "err", err)
			}
			containers += n
		}
	}
	for _, d := range left[lifeline.Dir] {
		if err := os.RemoveAll(d); err != nil {
			log.Warn("remove private dir", "path", d, "err", err)
		}
	}
	log.Warn("the server is gone; ended what it left running",
		"processGroups", killed, "containers", containers, "dirs", len(left[lifeline.Dir]))
}

// lateCreate is how long after its first sweep the watchdog sweeps the dead server's containers
// again.
const lateCreate = 3 * time.Second

// watchdogEnvMark is set in the watchdog's environment; a server that finds it will not start
// a watchdog of its own, so a misdirected re-exec can never recurse.
const watchdogEnvMark = "CLINE_MCP_WATCHDOG=1"

// watchdogEnv is the watchdog's environment: enough to find the Docker engine or the Kubernetes
// cluster (a kubeconfig, or the pod's in-cluster account) and a temp dir,
// none of the server's secrets (API keys, tokens).
func watchdogEnv(env []string) []string {
	out := []string{watchdogEnvMark}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH", k == "HOME", k == "USER", k == "LOGNAME", k == "TMPDIR", k == "XDG_RUNTIME_DIR",
			k == "SSH_AUTH_SOCK", strings.HasPrefix(k, "DOCKER_"),
			k == "KUBECONFIG", k == "KUBERNETES_SERVICE_HOST", k == "KUBERNETES_SERVICE_PORT":
			out = append(out, kv)
		}
	}
	return out
}
