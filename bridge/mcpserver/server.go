// Package mcpserver owns the MCP face of cline-mcp: the three tool definitions (annotations, and
// input and output schemas generated from Go types in schema.go), argument validation before any
// side effect, progress notifications, and the one mapping from a run.Result to MCP content. It is
// the only package that uses mcp-go's server side.
package mcpserver

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Runner executes one validated call. *run.Runner implements it.
type Runner interface {
	Do(ctx context.Context, call run.Call, progress run.Progress) run.Result
}

// Options configures a Server. Zero values mean the defaults noted per field.
type Options struct {
	Name    string // default "cline-mcp"
	Version string
	Runner  Runner
	// Floor is the server's isolation floor (--isolation); default host.
	Floor sandbox.Isolation
	// GOOS selects platform rules such as the Windows prompt limits; default runtime.GOOS.
	GOOS string
	// Heartbeat is the longest silence between progress notifications; default 10 s.
	Heartbeat time.Duration
	// Throttle is the shortest gap between event-driven progress notifications; default 500 ms.
	Throttle time.Duration
	// Quiet is the least time between a call's last progress notification and its result
	// (enforced by the wire when writing; see progress.Close); default 200 ms.
	Quiet  time.Duration
	Logger *slog.Logger
	// Sessions, when set, adds the cline_sessions tool (the ACP engine's conversations).
	Sessions SessionLister
	// Jobs, when set, lets a run tool run in the background ("background": true) and adds
	// cline_job; it also keeps results cut to ResultMaxChars (0: DefaultResultMaxChars) for
	// paging.
	Jobs           *jobs.Store
	ResultMaxChars int
	// AskUser: the runs may put tool calls to the user (--ask-commands); a synchronous call of a
	// 2026-07-28 client then asks in its result (mrtr.go).
	AskUser bool
	// Gate, when set, names the caller of each request (the HTTP service's tenant) and admits its
	// background jobs; a caller sees only its own jobs.
	Gate Gate
}

// DefaultResultMaxChars is how many characters one answer carries at most, its text and its
// structuredContent together (fit.go): about 15k tokens, well under Claude Code's cap of about
// 25k tokens per tool result.
const DefaultResultMaxChars = 60000

// Server is the stdio MCP server.
type Server struct {
	opts Options
	mcp  *server.MCPServer
	val  validator
	// wire is the stdio session's ordered writer; set by Serve before the first request.
	wire atomic.Pointer[wire]
	// http is set by HTTPHandler: progress goes to each request's own stream.
	http atomic.Bool
	// serveCtx is Serve's ctx: background jobs end with it.
	serveCtx atomic.Pointer[context.Context]
	// live holds what cline_job reaches of running jobs (jobs_live.go); parked the synchronous
	// runs waiting for a client's answer (mrtr.go), by requestState.
	live   live
	parked sync.Map
}

// life is the context background jobs live in: Serve's, or Background before Serve.
func (s *Server) life() context.Context {
	if c := s.serveCtx.Load(); c != nil {
		return *c
	}
	return context.Background()
}

// New registers the three tools.
func New(opts Options) *Server {
	if opts.Name == "" {
		opts.Name = "cline-mcp"
	}
	if opts.Floor == "" {
		opts.Floor = sandbox.IsolationHost
	}
	if opts.GOOS == "" {
		opts.GOOS = runtime.GOOS
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 10 * time.Second
	}
	if opts.Throttle <= 0 {
		opts.Throttle = 500 * time.Millisecond
	}
	if opts.Quiet <= 0 {
		opts.Quiet = 200 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.ResultMaxChars <= 0 {
		opts.ResultMaxChars = DefaultResultMaxChars
	}
	s := &Server{
		opts: opts,
		val:  validator{goos: opts.GOOS, floor: opts.Floor, wd: os.Getwd},
	}
	if opts.Jobs != nil {
		s.val.jobSeconds = int(opts.Jobs.Limit().Seconds())
	}
	hooks := &server.Hooks{}
	// A request the client cancelled while it waited in mcp-go's queue never starts: mcp-go
	// only cancels requests that already run. The error answer is withheld by the wire.
	hooks.AddOnRequestInitialization(func(_ context.Context, id any, _ any) error {
		if w := s.wire.Load(); w != nil && w.cancelled(id) {
			return errCancelledBeforeStart
		}
		return nil
	})
	mcpOpts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithHooks(hooks),
		server.WithInstructions(instructions(opts.Jobs != nil, opts.Sessions != nil)),
	}
	if opts.Jobs != nil { // the tasks extension (tasks.go); never the 2025 task API
		mcpOpts = append(mcpOpts, server.WithExtensions(map[string]any{tasksExtension: map[string]any{}}))
	}
	s.mcp = server.NewMCPServer(opts.Name, opts.Version, mcpOpts...)
	for _, spec := range toolSpecs {
		s.mcp.AddTool(withSearchHint(spec.mcpTool()), s.handler(spec.tool))
	}
	if opts.Sessions != nil {
		s.addSessionsTool()
	}
	if opts.Jobs != nil {
		s.addJobTool()
	}
	return s
}

// Serve speaks MCP over in/out until in reaches EOF or ctx ends. Calls still running then are
// cancelled and finish their cleanup (processes, containers, worktrees, settings) before Serve
// returns. After EOF their results (kind cancelled) are still written; after ctx ended (the
// server got a signal, in practice from the client that is going away) they are not. Nothing but
// JSON-RPC is ever written to out, in an order the spec allows: no notification for a request
// after its response, and no response to a request the client cancelled (see wire). Serve runs
// once per Server.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	w := newWire(out, s.opts.Logger, func() bool { return ctx.Err() != nil }, s.opts.Quiet)
	if !s.wire.CompareAndSwap(nil, w) {
		w.close()
		return errors.New("mcpserver: Serve called twice")
	}
	defer w.close() // after Listen returned: every handler has returned and written
	s.serveCtx.Store(&ctx)
	if ext := s.extension(); ext != nil {
		w.take = func(line []byte) ([]byte, bool) { return ext.take(ctx, line) }
	}
	std := server.NewStdioServer(s.mcp)
	std.SetErrorLogger(log.New(slogWriter{s.opts.Logger}, "", 0))
	server.WithWorkerPoolSize(100)(std)
	server.WithQueueSize(1000)(std)
	return std.Listen(ctx, w.reader(in), w)
}

func (s *Server) handler(tool run.Tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		log := s.opts.Logger.With("tool", string(tool))
		if req.Params.RequestState != "" {
			return s.resume(ctx, tool, req, s.callProgress(ctx, req)), nil
		}
		r, err := s.val.request(tool, req.Params.Arguments)
		if err != nil {
			log.Info("rejected call", "reason", err.Error())
			return toolResult(tool, run.Result{Kind: "launch_failed", Message: "invalid arguments: " + err.Error()}), nil
		}
		call := r.call
		if r.background {
			log.Info("background job started")
			return s.startJob(ctx, tool, call), nil
		}
		p := s.callProgress(ctx, req)
		if s.asksThroughResult(ctx) {
			return s.parkedCall(ctx, tool, call, p), nil
		}
		start := time.Now()
		call.Ask = s.askOf(ctx)
		res := s.opts.Runner.Do(ctx, call, p.Report)
		p.Close()
		if s.http.Load() {
			p.settle(s.opts.Quiet)
		}
		attrs := []any{"ok", res.OK, "kind", res.Kind, "attempts", res.Attempts,
			"isolation", string(res.Isolation), "seconds", time.Since(start).Seconds()}
		if !res.OK {
			// The log keeps the outcome even when the client cancelled and gets no response.
			attrs = append(attrs, "message", res.Message)
		}
		log.Info("call finished", attrs...)
		return s.answerRun(ctx, tool, res), nil
	}
}

// callProgress is the progress of a request: to its token, on the stdio wire or its HTTP stream.
func (s *Server) callProgress(ctx context.Context, req mcp.CallToolRequest) *progress {
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	var out notifier = nopNotifier{}
	if w := s.wire.Load(); w != nil {
		out = w
	} else if s.http.Load() {
		out = streamNotifier{ctx}
	}
	return newProgress(ctx, out, token, s.opts.Throttle, s.opts.Heartbeat)
}

// nopNotifier drops progress when the server runs without a stdio session.
type nopNotifier struct{}

func (nopNotifier) progress(mcp.ProgressToken, int, string) bool { return false }

// slogWriter routes mcp-go's own log lines to our logger (stderr), never stdout.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn("mcp-go", "msg", string(p))
	return len(p), nil
}
