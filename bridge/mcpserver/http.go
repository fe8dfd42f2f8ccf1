package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// Gate is what the MCP layer asks of the HTTP service (bridge/service) about the caller of a
// request.
type Gate interface {
	// Owner names the caller of ctx: its jobs and kept results are recorded as its own, and only
	// it can read or cancel them.
	Owner(ctx context.Context) string
	// Job admits a background job of the caller of ctx before it starts: the context its run
	// takes its values from (never its cancellation) and done, called once when the job ended;
	// or the refusal answered instead.
	Job(ctx context.Context) (values context.Context, done func(), refusal *run.Result)
}

// owner is the caller of ctx as the Gate names it ("" without one: the stdio session).
func (s *Server) owner(ctx context.Context) string {
	if s.opts.Gate == nil {
		return ""
	}
	return s.opts.Gate.Owner(ctx)
}

// gateJob admits a background job of the caller of ctx. The job's context carries the request's
// values (the caller) and ends with the server's life, not with the request.
func (s *Server) gateJob(ctx context.Context) (context.Context, func(), *run.Result) {
	values, done, refusal := s.opts.Gate.Job(ctx)
	if refusal != nil {
		return nil, nil, refusal
	}
	jctx, cancel := context.WithCancel(context.WithoutCancel(values))
	unregister := context.AfterFunc(s.life(), cancel)
	return jctx, func() { unregister(); done() }, nil
}

// HTTPHandler serves the same tools over MCP's streamable HTTP transport at every path it is
// mounted on, until ctx ends (background jobs end with ctx). The transport is stateless, POST
// only (GET and DELETE: 405): each POST is its own session, so a call's progress notifications go
// to its own response stream
// (server-sent events) and always before its result, as mcp-go drains them in order; a client
// that closes the request cancels the call (the run stops and cleans up). notifications/cancelled
// is accepted and ignored: without sessions a request id does not name one caller's request,
// and acting on it would let one caller cancel another's call. Callers authenticate before
// this handler (bridge/service.Auth). HTTPHandler and Serve are exclusive; each runs once.
func (s *Server) HTTPHandler(ctx context.Context) http.Handler {
	if !s.http.CompareAndSwap(false, true) || s.wire.Load() != nil {
		panic("mcpserver: HTTPHandler after Serve or twice")
	}
	s.serveCtx.Store(&ctx)
	h := server.NewStreamableHTTPServer(s.mcp,
		server.WithStateLess(true),
		server.WithStreamableHTTPLogger(s.opts.Logger.With("component", "mcp-http")),
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodDelete {
			// No standalone stream and no session to end: in mcp-go's stateless mode a GET
			// stream registers one session that every later POST would share, and with it
			// every caller's progress.
			w.Header().Set("Allow", "POST")
			http.Error(w, "this server offers no standalone stream: POST requests only", http.StatusMethodNotAllowed)
			return
		}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHTTPBody))
			if err != nil {
				http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
				return
			}
			if isCancel(body) {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			if ext := s.extension(); ext != nil {
				if resp, ok := ext.take(r.Context(), body); ok {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write(resp)
					return
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
}

// maxHTTPBody bounds one POST: a prompt of a few hundred KB and its JSON-RPC envelope.
const maxHTTPBody = 4 << 20

func isCancel(body []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == string(mcp.MethodNotificationCancelled)
}

// streamNotifier sends a request's progress to the client of ctx: over streamable HTTP, the
// request's own response stream. mcp-go queues it without blocking (dropped when 100 wait).
type streamNotifier struct{ ctx context.Context }

func (n streamNotifier) progress(token mcp.ProgressToken, p int, msg string) bool {
	srv := server.ServerFromContext(n.ctx)
	if srv == nil || n.ctx.Err() != nil {
		return false
	}
	return srv.SendNotificationToClient(n.ctx, string(mcp.MethodNotificationProgress),
		map[string]any{"progressToken": token, "progress": p, "message": msg}) == nil
}

// settle returns once quiet has passed since the request's last progress notification (at once
// when it sent none). Over streamable HTTP mcp-go writes the result right behind the
// notifications still queued, often in the same read, and the TypeScript SDK then handles the
// notification after the result and reports its token as unknown (see progress.Close; on stdio
// the wire keeps this gap).
func (p *progress) settle(quiet time.Duration) {
	p.mu.Lock()
	sent, last := p.n > 0, p.last
	p.mu.Unlock()
	if !sent {
		return
	}
	if d := quiet - time.Since(last); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-p.ctx.Done():
		}
	}
}
