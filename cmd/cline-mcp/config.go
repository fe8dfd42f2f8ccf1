package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/mcpserver"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
	configfile "github.com/cline-mcp/cline-mcp/config"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/docker"
	"github.com/cline-mcp/cline-mcp/sandbox/egress"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// config is every flag of the server. Environment variables are read only in this package.
type config struct {
	cline          string
	isolation      string
	retryIsolation string
	analysisPolicy string
	askCommands    bool
	askTimeout     time.Duration
	protocol       string
	sessionsDir    string
	sessionIdle    time.Duration
	warmAgents     int
	jobsDir        string
	jobMax         time.Duration
	jobIdle        time.Duration
	jobKeep        time.Duration
	resultMax      int
	warmIdle       time.Duration
	maxCost        float64
	maxIterations  int

	dockerHost    string
	dockerMounts  string
	dockerImage   string
	dockerNetwork string
	// dockerEgress is resolved by validate (egressMode): provider, none or open.
	dockerEgress      string
	dockerEgressImage string
	egressAllow       multiFlag
	dockerMemory      string
	dockerPids        int64
	dockerCPUs        float64
	dockerWarm        int
	dockerCline       string
	dockerEnv         multiFlag
	k8s               k8sConfig
	service           serviceFlags

	worktreeRoot string
	pool         int
	poolIdle     time.Duration
	logFile      string
	logLevel     string
	stopGrace    time.Duration
	// backoff (0: 2–3 s) and heartbeat come from the tests' environment (testEnv), not from flags.
	backoff   time.Duration
	heartbeat time.Duration
	// maxConcurrent bounds the calls that run at once (--max-concurrent).
	maxConcurrent int

	// args are the flags in effect, as given or set by the configuration file, passed on to the
	// lifeline watchdog.
	args []string
	// configFile names the configuration file (--config-file; "none": no file).
	configFile string
}

// maxPool bounds --workspace-pool: every idle worktree is a full checkout on disk.
const maxPool = 16

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func (c *config) register(fs *flag.FlagSet) {
	fs.StringVar(&c.cline, "cline", "", "path of the Cline executable (default: $CLINE_MCP_CLINE, else cline on PATH)")
	fs.StringVar(&c.isolation, "isolation", "host", "isolation floor: host, docker or kubernetes (a pod per run); calls may ask for more, never less")
	fs.StringVar(&c.retryIsolation, "retry-isolation", "", "run retries with this isolation (docker or kubernetes), even when the first attempt ran on the host")
	fs.StringVar(&c.protocol, "cline-protocol", "json", "how the server speaks to the Cline CLI: json (one cline --json process per call) or acp (cline --acp, the Agent Client Protocol: every tool call answered by the tool's policy)")
	fs.StringVar(&c.sessionsDir, "sessions-dir", "", "where the conversations of the acp protocol are kept between calls and restarts (default: <user cache dir>/cline-mcp/sessions)")
	fs.DurationVar(&c.sessionIdle, "session-idle", sessions.DefaultIdle, "how long a conversation without a turn can still be continued")
	fs.IntVar(&c.warmAgents, "warm-agents", 2, "with the acp protocol, how many Cline processes of host calls are kept running for later calls in the same directory (0: none)")
	fs.DurationVar(&c.warmIdle, "warm-idle", 5*time.Minute, "how long an unused warm Cline process is kept")
	fs.StringVar(&c.jobsDir, "jobs-dir", "", "where background jobs and long results are kept (default: <user cache dir>/cline-mcp/jobs)")
	fs.DurationVar(&c.jobMax, "job-max", time.Hour, "longest a background job may run")
	fs.DurationVar(&c.jobIdle, "job-idle", 10*time.Minute, "a background job whose run reports nothing for this long is stopped")
	fs.DurationVar(&c.jobKeep, "job-keep", 7*24*time.Hour, "how long a finished job's result is kept")
	fs.IntVar(&c.resultMax, "result-max-chars", mcpserver.DefaultResultMaxChars, "most characters one answer of any tool carries, its text and structuredContent together; a longer result is cut and kept for cline_job's pages")
	fs.Float64Var(&c.maxCost, "max-cost-usd", 0, "spend limit of a call in US dollars, from the cost the CLI reports as it runs: the run is stopped and the result is budget_exceeded (0: none); a call's maxCostUsd may ask for less, never more")
	fs.IntVar(&c.maxIterations, "max-iterations", 0, "iteration limit of a call (one model call and its tool calls each): the run is stopped past it, budget_exceeded (0: none); a call's maxIterations may ask for less, never more")
	fs.BoolVar(&c.askCommands, "ask-commands", false, "with the acp protocol, put each command of apply_cline_edits (one the git allow-list lets through) to the user first: an elicitation to a client that supports it, else a question on the background job (cline_job); without an answer it is refused")
	fs.DurationVar(&c.askTimeout, "ask-timeout", time.Minute, "how long a permission request put to the user waits for an answer before it is refused")
	fs.StringVar(&c.analysisPolicy, "analysis-policy", "readonly", "tool policy of the analysis tools (ask_cline, ask_cline_workspace, review_cline): readonly (Cline may read, never write) or seed (--auto-approve false: every tool denied, as the original bridge did)")
	fs.StringVar(&c.dockerHost, "docker-host", "", "Docker engine address (unix:///path, tcp://host:port, ssh://user@host); default: like the docker CLI — DOCKER_HOST, DOCKER_CONTEXT, the current context of the Docker config, the default socket, rootless Docker and Podman sockets")
	fs.StringVar(&c.dockerMounts, "docker-mounts", "auto", "how the checkout and the settings copy reach the container: bind (the engine sees this machine's paths), copy (copied in and out through the engine's API: dind on CI, remote engines) or auto (a probe decides once)")
	fs.StringVar(&c.dockerImage, "docker-image", "cline-mcp/cline:latest", "image with the Cline CLI for docker isolation")
	fs.StringVar(&c.dockerNetwork, "docker-network", "bridge", "with --docker-egress provider: the network the egress proxy reaches the provider through (bridge or a named network); with open: the containers' network (none, bridge, a named network, host or container:<name>)")
	fs.StringVar(&c.dockerEgress, "docker-egress", "", "network of Docker runs: provider (default: only the provider's API, through an egress proxy), none (no network; the default with --docker-network none) or open (the --docker-network as it is)")
	fs.StringVar(&c.dockerEgressImage, "docker-egress-image", "cline-mcp/egress:latest", "image of the egress proxy (make image-egress)")
	fs.Var(&c.egressAllow, "egress-allow", "host:port (or *.domain:port) every Docker run may reach besides its provider, with --docker-egress provider (repeatable)")
	fs.StringVar(&c.dockerMemory, "docker-memory", "2g", "container memory limit (e.g. 512m, 2g)")
	fs.Int64Var(&c.dockerPids, "docker-pids", 256, "container pids limit")
	fs.Float64Var(&c.dockerCPUs, "docker-cpus", 2, "container CPU limit")
	fs.IntVar(&c.dockerWarm, "docker-warm", 0, "started containers kept ready for Docker calls (0 to 16; each serves one call and is replaced; with the acp protocol also as many spare Cline processes for new conversations)")
	fs.StringVar(&c.dockerCline, "docker-cline", "/usr/local/bin/cline", "path of the Cline executable inside the image")
	fs.Var(&c.dockerEnv, "docker-env", "name of a server environment variable to pass into the container (repeatable), e.g. OPENAI_API_KEY")
	c.k8s.register(fs)
	c.service.register(fs)
	fs.StringVar(&c.configFile, configfile.FileFlag, "", "the configuration file of settings set once per machine (default: $"+configfile.EnvFile+", else <user config dir>/cline-mcp/config.toml; none: no file); a flag overrides it (docs/configuration.md)")
	fs.StringVar(&c.worktreeRoot, "worktree-root", "", "directory for disposable worktrees (default: $TMPDIR/cline-mcp-worktrees)")
	fs.IntVar(&c.pool, "workspace-pool", 0, "idle worktrees per repository kept for later ask_cline_workspace calls (0: every worktree is removed after its call)")
	fs.DurationVar(&c.poolIdle, "workspace-pool-idle", worktree.DefaultPoolIdle, "how long an idle pooled worktree is kept")
	fs.StringVar(&c.logFile, "log-file", "", "write logs to this file instead of stderr")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&c.stopGrace, "stop-grace", sandbox.DefaultStopGrace, "time between the polite stop (SIGINT) and SIGKILL on timeout or cancel")
	fs.IntVar(&c.maxConcurrent, "max-concurrent", defaultMaxConcurrent, "most calls that run at once (each is a Cline process or container of ~0.4 GB); later calls wait in arrival order")
}

// defaultHeartbeat is the longest silence between progress notifications of a call that carries
// a progressToken.
const defaultHeartbeat = 10 * time.Second

// Test hooks: environment variables that only the test suites set, to make retries and heartbeats
// fast enough to test. They are not flags, so --help and the documentation stay about what users
// configure; they are read here, in cmd, and nowhere else.
const (
	// envTestRetryBackoff is a fixed pause before a retry instead of 2–3 s (0: the 2–3 s).
	envTestRetryBackoff = "CLINE_MCP_TEST_RETRY_BACKOFF"
	// envTestHeartbeat replaces defaultHeartbeat (100ms to 1m).
	envTestHeartbeat = "CLINE_MCP_TEST_PROGRESS_HEARTBEAT"
)

// testEnv reads the test hooks from getenv; a malformed value is an error naming the variable.
func (c *config) testEnv(getenv func(string) string) error {
	c.backoff, c.heartbeat = 0, defaultHeartbeat
	if v := getenv(envTestRetryBackoff); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%s=%q: want a duration of 0 or more", envTestRetryBackoff, v)
		}
		c.backoff = d
	}
	if v := getenv(envTestHeartbeat); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > time.Minute {
			return fmt.Errorf("%s=%q: want a duration between 100ms and 1m", envTestHeartbeat, v)
		}
		c.heartbeat = d
	}
	return nil
}

// defaultMaxConcurrent suits a laptop: a real Cline CLI run peaks at ~420 MB RSS and spends ~4 s of
// CPU starting (measured, contract TestCLIHonoursProviderSettingsPath), so four at once stay under
// 2 GB and a few cores, while the parallel calls a client makes (two or three) never wait.
const defaultMaxConcurrent = 4

func (c *config) validate() error {
	if _, err := sandbox.ParseIsolation(c.isolation); err != nil {
		return fmt.Errorf("--isolation: %w", err)
	}
	if c.retryIsolation != "" {
		if _, err := sandbox.ParseIsolation(c.retryIsolation); err != nil {
			return fmt.Errorf("--retry-isolation: %w", err)
		}
	}
	if c.isolation == "docker" && c.retryIsolation == "kubernetes" || c.isolation == "kubernetes" && c.retryIsolation == "docker" {
		return fmt.Errorf("--isolation %s and --retry-isolation %s: a server runs containers on one engine", c.isolation, c.retryIsolation)
	}
	if err := c.k8s.validate(); err != nil {
		return err
	}
	if c.protocol != "json" && c.protocol != "acp" {
		return fmt.Errorf("--cline-protocol must be json or acp, not %q", c.protocol)
	}
	if c.analysisPolicy != "readonly" && c.analysisPolicy != "seed" {
		return fmt.Errorf("--analysis-policy must be readonly or seed, not %q", c.analysisPolicy)
	}
	if err := c.engineFlags(c.args); err != nil {
		return err
	}
	mode, err := sandbox.ResolveEgressMode(c.dockerEgress, c.dockerNetwork, len(c.egressAllow) > 0)
	if err != nil {
		return err
	}
	c.dockerEgress = string(mode)
	if c.container() == sandbox.IsolationKubernetes {
		c.dockerEgress = "" // pods: no Docker egress proxy stands between a run and the network
	}
	for _, a := range c.egressAllow {
		if _, err := egress.ParseEndpoint(a); err != nil {
			return fmt.Errorf("--egress-allow: %w", err)
		}
	}
	if _, err := docker.ParseMountMode(c.dockerMounts); err != nil {
		return fmt.Errorf("--docker-mounts: %w", err)
	}
	if _, err := parseBytes(c.dockerMemory); err != nil {
		return fmt.Errorf("--docker-memory: %w", err)
	}
	if c.dockerPids < 16 {
		return fmt.Errorf("--docker-pids must be at least 16")
	}
	if c.dockerCPUs <= 0 {
		return fmt.Errorf("--docker-cpus must be positive")
	}
	if c.dockerWarm < 0 || c.dockerWarm > 16 {
		return fmt.Errorf("--docker-warm must be between 0 and 16")
	}
	if c.stopGrace <= 0 || c.stopGrace > time.Minute {
		return fmt.Errorf("--stop-grace must be between 0 and 1m")
	}
	if c.pool < 0 || c.pool > maxPool {
		return fmt.Errorf("--workspace-pool must be between 0 and %d", maxPool)
	}
	if c.poolIdle < time.Second || c.poolIdle > 24*time.Hour {
		return fmt.Errorf("--workspace-pool-idle must be between 1s and 24h")
	}
	if c.jobMax < time.Minute || c.jobMax > 7*24*time.Hour || c.jobIdle < 10*time.Second || c.jobIdle > c.jobMax {
		return fmt.Errorf("--job-max must be between 1m and 168h, and --job-idle between 10s and --job-max")
	}
	if c.jobKeep < time.Minute || c.resultMax < 1000 {
		return fmt.Errorf("--job-keep must be at least 1m and --result-max-chars at least 1000")
	}
	if !(c.maxCost >= 0) || math.IsInf(c.maxCost, 0) || c.maxIterations < 0 {
		return fmt.Errorf("--max-cost-usd and --max-iterations must be 0 (no limit) or positive")
	}
	if c.askTimeout < time.Second || c.askTimeout > time.Hour {
		return fmt.Errorf("--ask-timeout must be between 1s and 1h")
	}
	if c.warmAgents < 0 || c.warmAgents > 16 {
		return fmt.Errorf("--warm-agents must be between 0 and 16")
	}
	if c.warmIdle < time.Second || c.warmIdle > 24*time.Hour {
		return fmt.Errorf("--warm-idle must be between 1s and 24h")
	}
	if c.sessionIdle < time.Minute || c.sessionIdle > 30*24*time.Hour {
		return fmt.Errorf("--session-idle must be between 1m and 720h")
	}
	if c.maxConcurrent < 1 || c.maxConcurrent > 100 {
		return fmt.Errorf("--max-concurrent must be between 1 and 100")
	}
	return nil
}

func (c *config) logger(stderr io.Writer) (*slog.Logger, func(), error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, nil, fmt.Errorf("--log-level: %w", err)
	}
	out, closeFn := stderr, func() {}
	if c.logFile != "" {
		f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		out, closeFn = f, func() { f.Close() }
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: lvl})), closeFn, nil
}

// parseBytes reads sizes like 512m, 2g, 1073741824.
func parseBytes(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1<<10, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "m"):
		mult, s = 1<<20, strings.TrimSuffix(s, "m")
	case strings.HasSuffix(s, "g"):
		mult, s = 1<<30, strings.TrimSuffix(s, "g")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size like 512m or 2g", s)
	}
	return n * mult, nil
}

// container is the server's container isolation: kubernetes when a flag names it, else docker.
// spares is how many spare Cline processes of new conversations the server starts ahead: its
// warm containers' or warm pods' number, whichever engine it runs containers on.
func (c *config) spares() int {
	if c.container() == sandbox.IsolationKubernetes {
		return c.k8s.warm
	}
	return c.dockerWarm
}

func (c *config) container() sandbox.Isolation {
	if c.isolation == "kubernetes" || c.retryIsolation == "kubernetes" {
		return sandbox.IsolationKubernetes
	}
	return sandbox.IsolationDocker
}
