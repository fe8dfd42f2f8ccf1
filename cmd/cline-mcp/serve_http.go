package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/mcpserver"
	"github.com/cline-mcp/cline-mcp/bridge/service"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// serviceFlags are the flags of the HTTP service mode (docs/service.md).
type serviceFlags struct {
	metricsTenants bool
	addr           string
	tokens         string
	repoCache      string
	repoHosts      string
	maxBundle      int64
}

func (f *serviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "http", "", "serve MCP over streamable HTTP on this address (host:port) instead of stdio, as a service for many clients (docs/service.md)")
	fs.BoolVar(&f.metricsTenants, "http-metrics-tenants", false, "with --http: /metrics also reports each tenant's runs, queue, jobs, spend and refusals, labelled by tenant name (the endpoint needs no token)")
	fs.StringVar(&f.tokens, "http-tokens", "", "with --http: the token file naming each tenant (a SHA-256 of its bearer token) and its limits; re-read when it changes")
	fs.StringVar(&f.repoCache, "http-repo-cache", "", "with --http: where repositories that calls name by URL or send as a bundle are kept (default: service-repos in the jobs directory)")
	fs.StringVar(&f.repoHosts, "http-repo-hosts", "", "with --http: comma-separated hosts that repository URLs may name (default: any https host)")
	fs.Int64Var(&f.maxBundle, "http-max-bundle", service.DefaultMaxBundle, "with --http: the largest git bundle a call may send, in bytes")
}

// mcpPath is where the service answers MCP; healthPath answers 200 without a token (probes).
const (
	mcpPath    = "/mcp"
	healthPath = "/healthz"
	// metricsPath answers a Prometheus scrape without a token (bridge/service.Metrics).
	metricsPath = "/metrics"
)

// maxBundleCeiling bounds --http-max-bundle: a request holds the bundle's base64 in memory.
const maxBundleCeiling = 1 << 30

// checkService refuses a service that could run a call on the host, or that would answer on a
// non-loopback address without tokens.
func checkService(cfg *config) error {
	if err := service.Floor(sandbox.Isolation(cfg.isolation)); err != nil {
		return err
	}
	if cfg.askCommands {
		// An elicitation over mcp-go's stateless transport registers the asking request's session
		// as the one every other POST would share: another caller's progress and answers with it.
		return errors.New("--ask-commands is not offered with --http: the service has no session per caller to ask in")
	}
	if b := cfg.service.maxBundle; b < 0 || b > maxBundleCeiling {
		return fmt.Errorf("--http-max-bundle %d: must be between 0 (the default, %d) and %d bytes", b, service.DefaultMaxBundle, maxBundleCeiling)
	}
	host, _, err := net.SplitHostPort(cfg.service.addr)
	if err != nil {
		return fmt.Errorf("--http %q: %w", cfg.service.addr, err)
	}
	ip := net.ParseIP(host)
	if cfg.service.tokens == "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--http %s listens beyond this machine: it needs --http-tokens (no token, no service)", cfg.service.addr)
	}
	return nil
}

// serveHTTP runs the HTTP service until ctx ends, then stops taking requests, cancels what runs
// and lets it clean up.
func serveHTTP(ctx context.Context, cfg *config, log *slog.Logger) int {
	if err := checkService(cfg); err != nil {
		log.Error("cannot start", "err", err)
		return 2
	}
	var tokens *service.Tokens
	if cfg.service.tokens != "" {
		var err error
		if tokens, err = service.LoadTokens(cfg.service.tokens, log.With("component", "tokens")); err != nil {
			log.Error("cannot start", "err", err)
			return 2
		}
		checkTenants(tokens.Tenants(), cfg.maxConcurrent, log)
	}
	b, err := startBackend(ctx, cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	defer b.cleanup()
	ln, err := net.Listen("tcp", cfg.service.addr)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	var auth service.Authenticator
	if tokens != nil {
		auth = tokens
	}
	// The day's spend is kept beside the jobs (the job store reads only its own ids there).
	adm := &service.Admission{SpendFile: filepath.Join(b.jobs.Dir, "service-spend.json"), Log: log.With("component", "admission")}
	repos := &service.Repos{Dir: cfg.service.repoCache, MaxBundle: cfg.service.maxBundle}
	for _, h := range strings.Split(cfg.service.repoHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			repos.Hosts = append(repos.Hosts, h)
		}
	}
	if repos.Dir == "" {
		repos.Dir = filepath.Join(b.jobs.Dir, "service-repos")
	}
	repos.Sweep() // checkouts left by a service that stopped
	h := httpService(ctx, httpParts{cfg: cfg, log: log, inner: b.runner, jobs: b.jobs, auth: auth, admission: adm, repos: repos})
	// Requests live in ctx: a signal cancels the calls in flight (their runs clean up) instead of
	// Shutdown waiting for them to finish.
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return ctx }}
	log.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+mcpPath, "version", currentVersion(),
		"isolation", cfg.isolation, "tokens", cfg.service.tokens != "")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	// Shutdown returns once the cancelled calls have cleaned up and answered.
	stopCtx, stopCancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer stopCancel()
	_ = hs.Shutdown(stopCtx)
	b.jobs.Stop(stopCtx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("HTTP service stopped", "err", err)
		return 1
	}
	log.Info("HTTP service stopped")
	return 0
}

// httpParts is what the HTTP service is made of; tests build it with a fake inner runner.
type httpParts struct {
	cfg       *config
	log       *slog.Logger
	inner     service.Inner
	jobs      *jobs.Store
	auth      service.Authenticator // nil: every request is the local tenant (loopback only)
	admission *service.Admission
	repos     *service.Repos // nil: calls name only a cwd
}

// httpService is the service's handler: MCP at /mcp behind the token check, /healthz open.
func httpService(ctx context.Context, p httpParts) http.Handler {
	m := &service.Metrics{Admission: p.admission, PerTenant: p.cfg.service.metricsTenants}
	if p.auth != nil {
		p.auth = m.Authenticator(p.auth)
	}
	srv := mcpserver.New(mcpserver.Options{
		Version:        currentVersion(),
		Runner:         m.Runner(&service.Runner{Inner: p.inner, Admission: p.admission}),
		Floor:          sandbox.Isolation(p.cfg.isolation),
		Logger:         p.log,
		Heartbeat:      p.cfg.heartbeat,
		Jobs:           p.jobs,
		Gate:           m.Gate(service.Gate{Admission: p.admission}),
		ResultMaxChars: p.cfg.resultMax,
	})
	local := service.Tenant{Name: "local", Limits: service.Limits{MaxConcurrent: max(1, p.cfg.maxConcurrent), MaxQueued: 100, MaxJobs: 100}}
	mux := http.NewServeMux()
	if p.repos != nil {
		srv.AcceptRepository()
	}
	mux.Handle(mcpPath, service.Auth(p.auth, local, service.Repositories(p.repos, srv.HTTPHandler(ctx))))
	mux.Handle(metricsPath, m.Handler())
	mux.HandleFunc(healthPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}

// checkTenants logs what an operator should know about the tenants: one without a root reaches
// every directory the service can read; more concurrent runs than --max-concurrent wait there.
func checkTenants(ts []service.Tenant, maxConcurrent int, log *slog.Logger) {
	sum := 0
	for _, t := range ts {
		sum += t.Limits.MaxConcurrent
		if t.Root == "" {
			log.Warn("tenant without root: its calls may name any directory this service can read", "tenant", t.Name)
		}
	}
	if maxConcurrent > 0 && sum > maxConcurrent {
		log.Warn("the tenants' maxConcurrent add up to more than --max-concurrent: admitted runs may wait for a slot of the server", "sum", sum, "max-concurrent", maxConcurrent)
	}
}
