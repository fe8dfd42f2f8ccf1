package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// Questions to a client of protocol 2026-07-28, which takes no requests from the server: a
// synchronous call asks through its own result (multi round-trip, SEP-2322). The run goes on in
// the server; when it asks, the call answers input_required with an elicitation and a
// requestState naming the parked run, and the client's retry of the call (with the user's
// answer) delivers the answer and waits on, for the result or the next question. While a
// request waits, cancelling it cancels the run as for any call; a parked run nobody resumes
// gets its answer refused after --ask-timeout, finishes, and is forgotten parkedKeep after that.

// parkedKeep is how long the result of a parked run that finished stays to be collected.
const parkedKeep = 10 * time.Minute

// elicitID keys the question in input_required.
const elicitID = "permission"

// parked is a synchronous call's run while its client answers a question.
type parked struct {
	token, owner string
	asks         chan *mrtrAsk
	done         chan run.Result // buffered: the run's result
	cancel       context.CancelFunc

	mu       sync.Mutex
	progress func(string) // the waiting request's, or nil
	waiting  *mrtrAsk     // the question the client was sent
}

type mrtrAsk struct {
	p      run.Permission
	answer chan askReply
}

type askReply struct {
	allow bool
	why   string
}

func (pr *parked) report(msg string) {
	pr.mu.Lock()
	f := pr.progress
	pr.mu.Unlock()
	if f != nil {
		f(msg)
	}
}

func (pr *parked) attach(f func(string)) {
	pr.mu.Lock()
	pr.progress = f
	pr.mu.Unlock()
}

// ask is the run's AskFunc: it hands the question to the waiting request (or the next retry).
func (pr *parked) ask(ctx context.Context, p run.Permission) (bool, string) {
	q := &mrtrAsk{p: p, answer: make(chan askReply, 1)}
	select {
	case pr.asks <- q:
	case <-ctx.Done():
		return false, ""
	}
	select {
	case r := <-q.answer:
		return r.allow, r.why
	case <-ctx.Done():
		return false, ""
	}
}

// asksThroughResult reports whether a synchronous call asks its questions in its result: the
// server puts commands to the user, and the request is of protocol 2026-07-28 with elicitation
// among its capabilities.
func (s *Server) asksThroughResult(ctx context.Context) bool {
	if !s.opts.AskUser || !mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		return false
	}
	info := server.RequestProtocolInfoFromContext(ctx)
	return info != nil && info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
}

// parkedCall runs a call that may ask in its result.
func (s *Server) parkedCall(ctx context.Context, tool run.Tool, call run.Call, p *progress) *mcp.CallToolResult {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopLife := context.AfterFunc(s.life(), cancel)
	pr := &parked{token: hex.EncodeToString(b), owner: s.owner(ctx), asks: make(chan *mrtrAsk), done: make(chan run.Result, 1), cancel: cancel}
	pr.attach(p.Report)
	s.opts.Logger.Debug("permission questions of this call go to the client by elicitation in its result (input_required)")
	go func() {
		defer stopLife()
		defer cancel()
		call.Ask = pr.ask
		pr.done <- s.opts.Runner.Do(rctx, call, pr.report)
	}()
	return s.await(ctx, tool, pr, p)
}

// await waits for the parked run's result or its next question, or cancels it with the request.
func (s *Server) await(ctx context.Context, tool run.Tool, pr *parked, p *progress) *mcp.CallToolResult {
	finish := func(r run.Result) *mcp.CallToolResult {
		pr.attach(nil)
		s.closeProgress(p)
		s.opts.Logger.Info("call finished", "tool", string(tool), "ok", r.OK, "kind", r.Kind, "rounds", "multi")
		return s.answerRun(ctx, tool, r)
	}
	select {
	case r := <-pr.done:
		return finish(r)
	case <-ctx.Done():
		pr.cancel()
		return finish(<-pr.done)
	case q := <-pr.asks:
		if ctx.Err() != nil { // the request was cancelled as the question came: so is the run
			q.answer <- askReply{}
			pr.cancel()
			return finish(<-pr.done)
		}
		pr.attach(nil)
		pr.mu.Lock()
		pr.waiting = q
		pr.mu.Unlock()
		s.parked.Store(pr.token, pr)
		go s.forgetParked(pr)
		s.closeProgress(p)
		return server.NewInputRequestBuilder(pr.token).Elicit(elicitID, permissionParams(q.p)).ToolResult()
	}
}

// forgetParked drops a parked run parkedKeep after it finished with nobody waiting for it.
func (s *Server) forgetParked(pr *parked) {
	r := <-pr.done
	pr.done <- r // for a retry that comes in time
	time.AfterFunc(parkedKeep, func() { s.parked.CompareAndDelete(pr.token, pr) })
}

// resume is the retry of a call that asked: the user's answer goes to the run, and the retry
// waits as the first request did.
func (s *Server) resume(ctx context.Context, tool run.Tool, req mcp.CallToolRequest, p *progress) *mcp.CallToolResult {
	v, ok := s.parked.LoadAndDelete(req.Params.RequestState)
	pr, _ := v.(*parked)
	if !ok || pr.owner != s.owner(ctx) {
		s.closeProgress(p)
		return toolResult(tool, run.Result{Kind: "launch_failed", Message: "the run this retry answers is gone (finished long ago, or the server restarted): call the tool again"})
	}
	pr.mu.Lock()
	q := pr.waiting
	pr.waiting = nil
	pr.mu.Unlock()
	if q != nil {
		q.answer <- elicitReply(server.ElicitationResponse(req.Params.InputResponses, elicitID))
	}
	pr.attach(p.Report)
	return s.await(ctx, tool, pr, p)
}

// elicitReply reads the user's answer: accept (without "allow": false) allows.
func elicitReply(res *mcp.ElicitationResult) askReply {
	if res == nil {
		return askReply{why: "denied: the client's retry carried no answer; do not retry"}
	}
	if res.Action == mcp.ElicitationResponseActionAccept {
		if c, ok := res.Content.(map[string]any); !ok || c["allow"] != false {
			return askReply{allow: true}
		}
	}
	return askReply{why: fmt.Sprintf("denied by the user (%s); do not retry", res.Action)}
}

// closeProgress ends a request's progress (and, over HTTP, lets the last one settle).
func (s *Server) closeProgress(p *progress) {
	p.Close()
	if s.http.Load() {
		p.settle(s.opts.Quiet)
	}
}
