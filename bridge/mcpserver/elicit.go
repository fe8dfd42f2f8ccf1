package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// Approvals that reach the user. A tool call the run's policy leaves to the user (--ask-commands)
// is put to them through MCP elicitation when the client declared the capability (Claude Code
// does), else, for a background job, kept on the job for cline_job's "answer" (jobs_live.go);
// a synchronous call of a client without elicitation gets no AskFunc and the run refuses the
// call, saying there was no way to ask.

// elicitSession is the client session a run may put questions to, or nil: the request's session
// when it is one of the protocol versions that allow requests from the server and the client
// declared elicitation in initialize.
func elicitSession(ctx context.Context) server.ClientSession {
	if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		return nil // the 2026 protocol asks through the tool's result (input_required) instead
	}
	cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return nil
	}
	if _, can := cs.(server.SessionWithElicitation); !can || cs.GetClientCapabilities().Elicitation == nil {
		return nil
	}
	return cs
}

// elicitAsk asks through elicitation in session: accept (without "allow": false) allows the call,
// decline and cancel refuse it, and a failed request refuses it with the reason.
func (s *Server) elicitAsk(session server.ClientSession) run.AskFunc {
	return func(ctx context.Context, p run.Permission) (bool, string) {
		req := mcp.ElicitationRequest{Params: permissionParams(p)}
		res, err := s.mcp.RequestElicitation(s.mcp.WithContext(ctx, session), req)
		if err != nil {
			if ctx.Err() != nil {
				return false, ""
			}
			return false, "denied: the permission request could not be put to the user (" + err.Error() + "); do not retry"
		}
		if res.Action == mcp.ElicitationResponseActionAccept {
			if c, ok := res.Content.(map[string]any); !ok || c["allow"] != false {
				return true, ""
			}
		}
		return false, fmt.Sprintf("denied by the user (%s); do not retry", res.Action)
	}
}

// permissionParams is the elicitation of a permission: the question and a one-field form.
func permissionParams(p run.Permission) mcp.ElicitationParams {
	return mcp.ElicitationParams{Message: permissionMessage(p), RequestedSchema: map[string]any{
		"type":       "object",
		"properties": map[string]any{"allow": map[string]any{"type": "boolean", "title": "Allow", "description": "Let Cline run this", "default": true}},
	}}
}

// permissionMessage is the question: which tool, and its command lines.
func permissionMessage(p run.Permission) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Cline (cline-mcp) asks to use %s", orTool(p.Tool))
	if len(p.Commands) > 0 {
		b.WriteString(" to run:\n")
		for _, c := range p.Commands {
			b.WriteString("  " + cut(c, 500) + "\n")
		}
	} else if p.Title != "" {
		b.WriteString(": " + cut(p.Title, 500) + "\n")
	}
	b.WriteString("Allow it?")
	return b.String()
}

func orTool(t string) string {
	if t == "" {
		return "a tool"
	}
	return t
}

// askOf is a synchronous call's way to ask the user: elicitation when the client has it (nil:
// none).
func (s *Server) askOf(ctx context.Context) run.AskFunc {
	if session := elicitSession(ctx); session != nil {
		s.opts.Logger.Debug("permission questions of this call go to the client by elicitation")
		return s.elicitAsk(session)
	}
	var caps any
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil {
		caps = info.ClientCapabilities
	}
	s.opts.Logger.Debug("this call cannot ask the user: the client declared no elicitation, or its protocol has no server requests",
		"protocol", server.RequestProtocolVersion(ctx), "requestCapabilities", fmt.Sprintf("%+v", caps))
	return nil
}
