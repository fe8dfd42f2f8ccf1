package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/sessions"
)

// SessionLister lists the live sessions of the ACP engine (*sessions.Store).
type SessionLister interface {
	List(now time.Time) ([]sessions.Record, []string)
}

// sessionsTool is cline_sessions: the conversations a call can continue with sessionId.
const sessionsTool run.Tool = "cline_sessions"

// maxListed bounds the sessions one listing returns (most recently used first).
const maxListed = 100

// sessionsArguments are cline_sessions' arguments (its inputSchema is generated from them).
type sessionsArguments struct {
	Tool string `json:"tool,omitempty" jsonschema:"Only the sessions of this tool (ask_cline, apply_cline_edits or ask_cline_workspace)."`
}

// sessionsOutput is cline_sessions' structuredContent (its outputSchema is generated from it).
type sessionsOutput struct {
	Sessions []sessions.Record `json:"sessions"`
	Warnings []string          `json:"warnings"`
	// Truncated is set when the listing was cut to fit: the whole is kept for cline_job's pages.
	Truncated *truncation `json:"truncated,omitempty"`
}

func (s *Server) addSessionsTool() {
	t := mcp.NewToolWithRawSchema(string(sessionsTool),
		"List the Cline conversations this server can continue: pass a sessionId from here (or from an earlier result) "+
			"to the same tool for a follow-up that sees the earlier turns. Sessions expire when idle.", inputSchema(sessionsTool))
	t.RawOutputSchema = outputSchema(sessionsTool)
	t.Annotations = mcp.ToolAnnotation{Title: "Cline sessions", ReadOnlyHint: mcp.ToBoolPtr(true),
		DestructiveHint: mcp.ToBoolPtr(false), IdempotentHint: mcp.ToBoolPtr(true), OpenWorldHint: mcp.ToBoolPtr(false)}
	s.mcp.AddTool(withSearchHint(t), s.sessionsHandler())
}

func (s *Server) sessionsHandler() server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a sessionsArguments
		if _, err := decode(sessionsTool, req.Params.Arguments, &a); err != nil {
			return mcp.NewToolResultError("invalid arguments: " + err.Error()), nil
		}
		recs, bad := s.opts.Sessions.List(time.Now())
		list := []sessions.Record{}
		for _, r := range recs {
			if (a.Tool == "" || r.Tool == a.Tool) && len(list) < maxListed {
				list = append(list, r)
			}
		}
		if bad == nil {
			bad = []string{}
		}
		return s.fitSessions(ctx, sessionsOutput{Sessions: list, Warnings: bad}), nil
	}
}

// answer is the listing's answer, its text ending in note when there is one.
func (o sessionsOutput) answer(note string) *mcp.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "%d session(s)", len(o.Sessions))
	for _, r := range o.Sessions {
		fmt.Fprintf(&b, "\n%s  %s  %s  turns %d, last used %s  %s", r.ID, r.Tool, r.Cwd, r.Turns, r.LastUsed.Format(time.RFC3339), r.Title)
	}
	if note != "" {
		b.WriteString("\n\n" + note)
	}
	return mcp.NewToolResultStructured(o, b.String())
}

// fitSessions is the listing within ResultMaxChars: a longer one is kept whole as a finished
// job (read in pages with cline_job) and lists the most recently used sessions that fit.
func (s *Server) fitSessions(ctx context.Context, o sessionsOutput) *mcp.CallToolResult {
	whole := o.answer("")
	limit := s.opts.ResultMaxChars
	if chars(whole) <= limit {
		return whole
	}
	note := fmt.Sprintf("only the most recently used sessions that fit --result-max-chars %d are listed; pass tool to list fewer", limit)
	if s.opts.Jobs != nil {
		sc, err := compactJSON(whole.StructuredContent)
		var b []byte
		if err == nil {
			b, err = json.Marshal(storedResult{Text: textOf(whole), Structured: sc})
		}
		var job jobs.Job
		if err == nil {
			job, err = s.opts.Jobs.SaveFor(s.owner(ctx), string(sessionsTool), b, true)
		}
		if err == nil {
			o.Truncated = s.truncation(job, textOf(whole))
			note = fmt.Sprintf("only the most recently used sessions that fit --result-max-chars %d are listed; the whole listing (%d sessions) is kept: read it with cline_job {\"jobId\": %q, \"action\": \"result\", \"page\": 1} through \"page\": %d",
				limit, len(o.Sessions), o.Truncated.JobID, o.Truncated.Pages)
		}
	}
	all := o.Sessions
	o.Warnings = append(slices.Clone(o.Warnings), note)
	// The most sessions that fit: the size grows with their number.
	n := sort.Search(len(all)+1, func(k int) bool {
		o.Sessions = all[:k]
		return chars(o.answer(note)) > limit
	}) - 1
	o.Sessions = all[:max(0, n)]
	return o.answer(note)
}
