package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// The MCP Tasks extension (io.modelcontextprotocol/tasks, SEP-2663), on top of the job store. A
// tools/call of a run tool whose request declares the extension in its per-request capabilities
// (params._meta["io.modelcontextprotocol/clientCapabilities"].extensions) starts a background job
// and answers at once with a task (resultType "task") whose taskId is the jobId; tasks/get reads
// the job (the same result the synchronous call answers, cut to --result-max-chars with a pointer
// to its pages), tasks/update answers the job's pending permissions, tasks/cancel cancels it. A
// request that does not declare the extension never gets a task, and the server never declares
// the 2025 task API (capabilities.tasks). mcp-go v1.2.1 knows only the 2025 API and offers no hook
// for methods of its own, so both transports offer every message to the extension before mcp-go
// reads it (the stdio wire's tap, the HTTP handler).

// extension answers messages that mcp-go cannot carry.
type extension interface {
	// take returns the response to msg (one JSON-RPC message) when the extension answers it, or
	// ok false to leave msg to mcp-go. It does not block for long: the stdio wire calls it while
	// it reads the client's input.
	take(ctx context.Context, msg []byte) (response []byte, ok bool)
}

const (
	tasksExtension = "io.modelcontextprotocol/tasks"
	clientCapsMeta = "io.modelcontextprotocol/clientCapabilities"
	// codeMissingCapability is the spec's Missing Required Client Capability.
	codeMissingCapability = -32021
	// taskPollInterval is the polling interval a task suggests.
	taskPollInterval = 2 * time.Second
)

// extension is the server's extension, or nil without a job store (no tasks to keep).
func (s *Server) extension() extension {
	if s.opts.Jobs == nil {
		return nil
	}
	return taskExtension{s}
}

type taskExtension struct{ s *Server }

type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// taskParams are the params of a tools/call and of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	Name           string                   `json:"name"`
	Arguments      json.RawMessage          `json:"arguments"`
	TaskID         string                   `json:"taskId"`
	InputResponses map[string]inputResponse `json:"inputResponses"`
	Meta           map[string]json.RawMessage
}

// inputResponse is the answer to one inputRequest: an elicitation result.
type inputResponse struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
}

func (t taskExtension) take(ctx context.Context, msg []byte) (resp []byte, ok bool) {
	var m rpcMessage
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil, false
	}
	defer func() { // as mcp-go's WithRecovery does for its handlers: the server keeps serving
		if r := recover(); r != nil {
			t.s.opts.Logger.Error("tasks extension panicked", "method", m.Method, "panic", fmt.Sprint(r))
			resp, ok = reply(m.ID, nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: "internal error"}), true
		}
	}()
	switch m.Method {
	case string(mcp.MethodToolsCall), "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return nil, false
	}
	var p taskParams
	if err := decodeTaskParams(m.Params, &p); err != nil {
		if m.Method == string(mcp.MethodToolsCall) {
			return nil, false // mcp-go answers what it cannot read
		}
		return reply(m.ID, nil, &rpcError{Code: mcp.INVALID_PARAMS, Message: "invalid params: " + err.Error()}), true
	}
	if m.Method == string(mcp.MethodToolsCall) {
		t.s.opts.Logger.Debug("tools/call", "tool", p.Name, "tasksExtensionDeclared", declared(p.Meta))
	}
	if !declared(p.Meta) {
		if m.Method == string(mcp.MethodToolsCall) {
			return nil, false
		}
		return reply(m.ID, nil, &rpcError{Code: codeMissingCapability, Message: "Missing required client capability",
			Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}}), true
	}
	if m.Method == string(mcp.MethodToolsCall) {
		res, ok := t.call(ctx, p)
		if !ok {
			return nil, false
		}
		return reply(m.ID, res, nil), true
	}
	res, e := t.task(ctx, m.Method, p)
	return reply(m.ID, res, e), true
}

// decodeTaskParams reads params, keeping _meta's members raw.
func decodeTaskParams(raw json.RawMessage, p *taskParams) error {
	if len(raw) == 0 {
		return errors.New("params are missing")
	}
	var meta struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return err
	}
	p.Meta = meta.Meta
	return nil
}

// declared reports whether a request's _meta declares the tasks extension in its per-request
// client capabilities (an object under extensions).
func declared(meta map[string]json.RawMessage) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(meta[clientCapsMeta], &caps) != nil {
		return false
	}
	v := bytes.TrimSpace(caps.Extensions[tasksExtension])
	return len(v) > 0 && v[0] == '{'
}

// call starts a run tool's call as a task; ok is false for a call left to mcp-go (another tool,
// or arguments mcp-go's handler rejects with its usual answer).
func (t taskExtension) call(ctx context.Context, p taskParams) (any, bool) {
	tool := run.Tool(p.Name)
	if !isRunTool(tool) {
		return nil, false
	}
	var args map[string]any
	if len(p.Arguments) > 0 && json.Unmarshal(p.Arguments, &args) != nil {
		return nil, false
	}
	// As a background call: without timeoutSeconds its attempts get the job's limit.
	withBackground := map[string]any{"background": true}
	for k, v := range args {
		withBackground[k] = v
	}
	r, err := t.s.val.request(tool, withBackground)
	if err != nil {
		return nil, false
	}
	job, refusal := t.s.launchJob(ctx, tool, r.call)
	if refusal != nil {
		res := toolResult(tool, *refusal)
		res.ResultType = mcp.ResultTypeComplete
		return res, true
	}
	t.s.opts.Logger.Info("task started", "tool", string(tool), "taskId", job.ID)
	tk := t.s.taskOf(job)
	tk.ResultType = "task"
	return tk, true
}

func isRunTool(tool run.Tool) bool {
	for _, spec := range toolSpecs {
		if spec.tool == tool {
			return true
		}
	}
	return false
}

var errNoTask = &rpcError{Code: mcp.INVALID_PARAMS, Message: "Failed to retrieve task: Task not found"}

// task answers tasks/get, tasks/update and tasks/cancel.
func (t taskExtension) task(ctx context.Context, method string, p taskParams) (any, *rpcError) {
	s := t.s
	j, err := s.opts.Jobs.Get(p.TaskID)
	if err != nil || j.Tenant != s.owner(ctx) { // another caller's job is not found either
		return nil, errNoTask
	}
	ack := map[string]any{"resultType": mcp.ResultTypeComplete}
	switch method {
	case "tasks/cancel":
		if _, err := s.opts.Jobs.Cancel(j.ID); err != nil {
			return nil, &rpcError{Code: mcp.INTERNAL_ERROR, Message: err.Error()}
		}
		s.opts.Logger.Info("task cancel requested", "taskId", j.ID)
		return ack, nil
	case "tasks/update":
		if lj := s.live.get(j.ID); lj != nil {
			for key, r := range p.InputResponses {
				allow := r.Action == string(mcp.ElicitationResponseActionAccept) && r.Content["allow"] != false
				_ = lj.answer(key, allow) // keys not outstanding are ignored, as the spec asks
			}
		}
		return ack, nil
	}
	tk := s.taskOf(j)
	tk.ResultType = mcp.ResultTypeComplete
	return tk, nil
}

// task is the spec's Task with the payload of its status (DetailedTask), and resultType.
type task struct {
	ResultType     mcp.ResultType          `json:"resultType"`
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage,omitempty"`
	CreatedAt      string                  `json:"createdAt"`
	LastUpdatedAt  string                  `json:"lastUpdatedAt"`
	TTLMs          int64                   `json:"ttlMs"`
	PollIntervalMs int64                   `json:"pollIntervalMs"`
	InputRequests  map[string]inputRequest `json:"inputRequests,omitempty"`
	Result         *mcp.CallToolResult     `json:"result,omitempty"`
	Error          *rpcError               `json:"error,omitempty"`
}

// inputRequest is a server-to-client request a task waits on: a pending permission of the job,
// put as the elicitation a synchronous call would send (elicit.go).
type inputRequest struct {
	Method string         `json:"method"`
	Params map[string]any `json:"params"`
}

// taskOf is the task of job j now. A run that ended, even failed, is completed with the tool's
// result (isError for a failure), as a synchronous call answers it; failed is kept for a job that
// has no result (its server stopped), cancelled for a cancelled job.
func (s *Server) taskOf(j jobs.Job) task {
	t := task{TaskID: j.ID, CreatedAt: stamp(j.Created), LastUpdatedAt: stamp(j.Updated),
		TTLMs: (s.opts.Jobs.Limit() + s.opts.Jobs.Retention()).Milliseconds(), PollIntervalMs: taskPollInterval.Milliseconds()}
	var stored storedResult
	hasResult := len(j.Result) > 0 && json.Unmarshal(j.Result, &stored) == nil
	switch {
	case j.State == jobs.Running:
		t.Status = "working"
		if n := len(j.Events); n > 0 {
			t.StatusMessage = cut(j.Events[n-1].Text, 500)
		}
		if lj := s.live.get(j.ID); lj != nil {
			if pending := lj.outstanding(); len(pending) > 0 {
				t.Status, t.InputRequests = "input_required", map[string]inputRequest{}
				for _, p := range pending {
					t.InputRequests[p.PermissionID] = permissionRequest(p)
				}
			}
		}
	case j.State == jobs.Cancelled:
		t.Status, t.StatusMessage = "cancelled", j.Error
	case hasResult:
		t.Status, t.StatusMessage = "completed", j.Error
		t.Result = s.taskResult(j, stored)
	default:
		t.Status, t.StatusMessage = "failed", j.Error
		t.Error = &rpcError{Code: mcp.INTERNAL_ERROR, Message: j.Error}
	}
	return t
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// taskResult is a finished task's result: what the synchronous call answers, within
// ResultMaxChars; cut, it points to the job's pages (cline_job with the taskId as jobId).
func (s *Server) taskResult(j jobs.Job, stored storedResult) *mcp.CallToolResult {
	whole := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(stored.Text)}, StructuredContent: stored.Structured, IsError: stored.IsError}
	limit := s.opts.ResultMaxChars
	if chars(whole) <= limit {
		return whole
	}
	t := s.truncation(j, stored.Text)
	if stored.Run == nil {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(pageNote(limit, t))}, IsError: stored.IsError}
	}
	return cutRun(run.Tool(j.Tool), *stored.Run, pageNote(limit, t), t, limit, chars)
}

// permissionRequest is the elicitation that asks for a pending permission.
func permissionRequest(p pendingPermission) inputRequest {
	return inputRequest{Method: string(mcp.MethodElicitationCreate), Params: map[string]any{
		"mode":    "form",
		"message": permissionMessage(run.Permission{Tool: p.Tool, Title: p.Title, Commands: p.Commands}),
		"requestedSchema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"allow": map[string]any{"type": "boolean", "title": "Allow", "description": "Let Cline run this", "default": true}},
		},
	}}
}

// outstanding is every pending permission of the job, oldest first.
func (lj *liveJob) outstanding() []pendingPermission {
	lj.mu.Lock()
	defer lj.mu.Unlock()
	out := make([]pendingPermission, 0, len(lj.pending))
	for _, q := range lj.pending {
		out = append(out, q.p)
	}
	return out
}

// reply is a JSON-RPC response: result, or e when it is set.
func reply(id json.RawMessage, result any, e *rpcError) []byte {
	msg := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id}
	if e != nil {
		msg["error"] = e
	} else {
		msg["result"] = result
	}
	b, err := json.Marshal(msg)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id,
			"error": rpcError{Code: mcp.INTERNAL_ERROR, Message: "the answer could not be encoded: " + err.Error()}})
	}
	return b
}
