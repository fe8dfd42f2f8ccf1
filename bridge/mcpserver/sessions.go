package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cline-mcp/cline-mcp/bridge/sessions"
)

// SessionLister lists the live sessions of the ACP engine (*sessions.Store).
type SessionLister interface {
	List(now time.Time) ([]sessions.Record, []string)
}

// sessionsTool is cline_sessions: the conversations a call can continue with sessionId.
const sessionsTool = "cline_sessions"

// maxListed bounds the sessions one listing returns (most recently used first).
const maxListed = 100

var sessionsInput = json.RawMessage(`{"type":"object","properties":{"tool":{"type":"string","description":"Only the sessions of this tool (ask_cline, apply_cline_edits or ask_cline_workspace)."}},"additionalProperties":false}`)

var sessionsOutput = json.RawMessage(`{"type":"object","required":["sessions"],"properties":{"sessions":{"type":"array","items":{"type":"object","properties":{` +
	`"sessionId":{"type":"string"},"tool":{"type":"string"},"isolation":{"type":"string"},"cwd":{"type":"string"},"dir":{"type":"string"},` +
	`"commit":{"type":"string"},"provider":{"type":"string"},"model":{"type":"string"},"created":{"type":"string"},"lastUsed":{"type":"string"},` +
	`"turns":{"type":"integer"},"title":{"type":"string"},"dataDir":{"type":"string"}}}},"warnings":{"type":"array","items":{"type":"string"}}}}`)

func (s *Server) addSessionsTool() {
	t := mcp.NewToolWithRawSchema(sessionsTool,
		"List the Cline conversations this server can continue: pass a sessionId from here (or from an earlier result) "+
			"to the same tool to ask a follow-up that sees the earlier turns. Sessions expire after an idle time.", sessionsInput)
	t.RawOutputSchema = sessionsOutput
	t.Annotations = mcp.ToolAnnotation{Title: "Cline sessions", ReadOnlyHint: mcp.ToBoolPtr(true),
		DestructiveHint: mcp.ToBoolPtr(false), IdempotentHint: mcp.ToBoolPtr(true), OpenWorldHint: mcp.ToBoolPtr(false)}
	s.mcp.AddTool(t, s.sessionsHandler())
}

func (s *Server) sessionsHandler() server.ToolHandlerFunc {
	return func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, _ := req.Params.Arguments.(map[string]any)
		filter := ""
		for k, v := range args {
			str, ok := v.(string)
			if k != "tool" || !ok {
				return mcp.NewToolResultError(fmt.Sprintf("invalid arguments: cline_sessions accepts only tool (a string), got %q", k)), nil
			}
			filter = str
		}
		recs, bad := s.opts.Sessions.List(time.Now())
		list := []sessions.Record{}
		for _, r := range recs {
			if (filter == "" || r.Tool == filter) && len(list) < maxListed {
				list = append(list, r)
			}
		}
		if bad == nil {
			bad = []string{}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d session(s)", len(list))
		for _, r := range list {
			fmt.Fprintf(&b, "\n%s  %s  %s  turns %d, last used %s  %s", r.ID, r.Tool, r.Cwd, r.Turns, r.LastUsed.Format(time.RFC3339), r.Title)
		}
		return mcp.NewToolResultStructured(map[string]any{"sessions": list, "warnings": bad}, b.String()), nil
	}
}
