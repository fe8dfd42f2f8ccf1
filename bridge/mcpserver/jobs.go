package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// Background jobs. A run tool called with "background": true starts a job (bridge/jobs) and
// answers at once with its jobId; cline_job reads the job's state, its progress after a cursor,
// its result when done, a page of a long result, or cancels it. Every answer fits
// ResultMaxChars (fit.go): a finished job's result is cut like a synchronous one's, the job
// keeping the whole for its pages.

// jobTool is the name of the job tool.
const jobTool run.Tool = "cline_job"

// storedResult is what a job keeps of a run: the content a synchronous call would have answered,
// and the run's result it was made from, to cut an answer that does not fit from (Run is nil in
// a listing kept for its pages and in records of earlier versions).
type storedResult struct {
	Text       string          `json:"text"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
	Run        *run.Result     `json:"run,omitempty"`
}

func store(tool run.Tool, r run.Result) (json.RawMessage, error) {
	res := toolResult(tool, r)
	sc, err := compactJSON(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	return json.Marshal(storedResult{Text: textOf(res), Structured: sc, IsError: res.IsError, Run: &r})
}

func textOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// startJob runs a validated call as a background job.
func (s *Server) startJob(ctx context.Context, tool run.Tool, call run.Call) *mcp.CallToolResult {
	job, refusal := s.launchJob(ctx, tool, call)
	if refusal != nil {
		return toolResult(tool, *refusal)
	}
	text := fmt.Sprintf("Started background job %s (%s). Read its progress and result with cline_job {\"jobId\": %q}; cancel it with \"action\": \"cancel\".", job.ID, tool, job.ID)
	return mcp.NewToolResultStructured(map[string]any{"ok": true, "jobId": job.ID, "state": job.State, "warnings": []string{}, "attempts": 0}, text)
}

// launchJob starts a validated call as a background job (also a task's: tasks.go), or returns
// the refusal to answer instead.
func (s *Server) launchJob(ctx context.Context, tool run.Tool, call run.Call) (jobs.Job, *run.Result) {
	stop, done := s.life(), func() {}
	if s.opts.Gate != nil {
		var refusal *run.Result
		if stop, done, refusal = s.gateJob(ctx); refusal != nil {
			return jobs.Job{}, refusal
		}
	}
	lj := &liveJob{steer: run.NewSteer()}
	job, err := s.opts.Jobs.StartFor(stop, s.owner(ctx), string(tool), func(jctx context.Context, progress func(string)) (json.RawMessage, bool) {
		defer done()
		lj.started(progress)
		call.Ask, call.Steer = s.jobAsk(ctx, lj), lj.steer
		r := s.opts.Runner.Do(jctx, call, progress)
		if left := s.live.finish(lj); len(left) > 0 {
			r.Warnings = append(r.Warnings, undelivered(left))
		}
		b, err := store(tool, r)
		if err != nil {
			return nil, false
		}
		return b, r.OK
	})
	if err != nil {
		done()
		return jobs.Job{}, &run.Result{Kind: "launch_failed", Message: "could not start the background job: " + err.Error()}
	}
	s.live.register(job.ID, lj)
	return job, nil
}

// jobArguments are cline_job's arguments (its inputSchema is generated from them).
type jobArguments struct {
	JobID  string    `json:"jobId" jsonschema:"The jobId of a background call, or of a cut result (its truncated.jobId)."`
	Action jobAction `json:"action,omitempty" rule:"default=status" jsonschema:"status: state, progress after cursor, the result when done; result: the result or a page of it; cancel: stop the job (its cleanup still runs); answer: allow (or not) its pendingPermission; steer: message for its next turn."`
	Cursor int       `json:"cursor,omitempty" rule:"min=0" msg:"must be a non-negative integer" jsonschema:"Only the progress events after this one (the last answer's nextCursor)."`
	Page   int       `json:"page,omitempty" rule:"min=1" msg:"must be a positive integer" jsonschema:"With action result: this page (1-based, up to truncated.pages) of the whole result's text."`
	// answer and steer (jobs_live.go)
	PermissionID string `json:"permissionId,omitempty"`
	Allow        bool   `json:"allow,omitempty"`
	Message      string `json:"message,omitempty"`
}

// jobAction is what cline_job does; its enum is jobActions.
type jobAction string

const (
	actionStatus jobAction = "status"
	actionResult jobAction = "result"
	actionCancel jobAction = "cancel"
	actionAnswer jobAction = "answer"
	actionSteer  jobAction = "steer"
)

var jobActions = []any{string(actionStatus), string(actionResult), string(actionCancel), string(actionAnswer), string(actionSteer)}

func (a jobArguments) check() error {
	if !jobs.ValidID(a.JobID) {
		return invalid("jobId must be a job id from an earlier answer (got %s)", describe(a.JobID))
	}
	return nil
}

// jobState is a job's state; its enum is the jobs package's states.
type jobState string

// jobOutput is cline_job's structuredContent (its outputSchema is generated from it).
type jobOutput struct {
	JobID          string          `json:"jobId"`
	Tool           string          `json:"tool"`
	State          jobState        `json:"state"`
	ElapsedSeconds float64         `json:"elapsedSeconds"`
	Events         []jobs.Event    `json:"events"`
	NextCursor     int             `json:"nextCursor"`
	Error          string          `json:"error,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Page           int             `json:"page,omitempty"`
	Pages          int             `json:"pages,omitempty"`
	Content        string          `json:"content,omitempty"`
	// MoreEvents: not every event after cursor fitted; ask again with nextCursor.
	MoreEvents bool `json:"moreEvents,omitempty"`
	// Truncated is set when the result was cut to fit: read its pages.
	Truncated *truncation `json:"truncated,omitempty"`
	// PendingPermission is the oldest tool call of the running job waiting for the user's answer.
	PendingPermission *pendingPermission `json:"pendingPermission,omitempty"`
}

func (s *Server) addJobTool() {
	t := mcp.NewToolWithRawSchema(string(jobTool), "Follow a background job of cline-mcp (a run tool called with \"background\": true) "+
		"or read a long result in pages: its state and progress, its result when done; answer its permission question, steer or cancel it.", inputSchema(jobTool))
	t.RawOutputSchema = outputSchema(jobTool)
	t.Annotations = mcp.ToolAnnotation{Title: "Cline job", ReadOnlyHint: mcp.ToBoolPtr(false),
		DestructiveHint: mcp.ToBoolPtr(false), IdempotentHint: mcp.ToBoolPtr(false), OpenWorldHint: mcp.ToBoolPtr(false)}
	s.mcp.AddTool(withSearchHint(t), s.jobHandler())
}

func (s *Server) jobHandler() server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a jobArguments
		_, err := decode(jobTool, req.Params.Arguments, &a)
		if err == nil {
			err = a.check()
		}
		if err != nil {
			return mcp.NewToolResultError("invalid arguments: " + err.Error()), nil
		}
		j, err := s.opts.Jobs.Get(a.JobID)
		if err == nil && j.Tenant != s.owner(ctx) {
			err = fmt.Errorf("%w: %s (unknown, or expired)", jobs.ErrNotFound, a.JobID) // another caller's job
		}
		if err == nil && a.Action == actionCancel {
			j, err = s.opts.Jobs.Cancel(a.JobID)
		}
		if err == nil && (a.Action == actionAnswer || a.Action == actionSteer) {
			err = s.jobControl(a)
		}
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return s.withPending(s.jobAnswer(j, a.Cursor, a.Page), a.JobID), nil
	}
}
