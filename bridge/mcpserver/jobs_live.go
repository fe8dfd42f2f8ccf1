package mcpserver

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/run"
)

// A running background job takes more from cline_job than cancel: the answer to a permission
// request its run put to the user (action "answer"), when the client has no elicitation, and
// steer messages (action "steer") that the ACP engine sends as the next turn. The server keeps
// these for running jobs only, in memory: a job of an earlier server process has no live run.

// pendingPermission is a permission request waiting on a job (cline_job's pendingPermission):
// the agent's tool call, to be shown as data.
type pendingPermission struct {
	PermissionID string   `json:"permissionId"`
	Tool         string   `json:"tool"`
	Title        string   `json:"title"`
	Commands     []string `json:"commands,omitempty"`
}

// permissionIDPattern is the form of the ids the server gives pending permissions.
var permissionIDPattern = regexp.MustCompile(`^p[0-9]{1,6}$`)

// maxPending bounds the questions one job keeps waiting (Cline asks one at a time; two tool calls
// of one response ask one after the other).
const maxPending = 8

// liveJob is what cline_job reaches of a running job.
type liveJob struct {
	steer    *run.Steer
	progress func(string)

	mu      sync.Mutex
	id      string
	seq     int
	pending []*question
	done    bool
}

type question struct {
	p      pendingPermission
	answer chan bool
}

// ask is the job's AskFunc: the question waits on the job until cline_job answers it or ctx
// ends (the request's timeout, the turn's end).
func (lj *liveJob) ask(ctx context.Context, p run.Permission) (bool, string) {
	lj.mu.Lock()
	if lj.done || len(lj.pending) >= maxPending {
		lj.mu.Unlock()
		return false, "denied: too many permission requests wait on this job; do not retry"
	}
	lj.seq++
	q := &question{p: pendingPermission{PermissionID: fmt.Sprintf("p%d", lj.seq), Tool: orTool(p.Tool), Title: cut(p.Title, 256)}, answer: make(chan bool, 1)}
	for _, c := range p.Commands[:min(len(p.Commands), 4)] {
		q.p.Commands = append(q.p.Commands, cut(c, 256))
	}
	lj.pending = append(lj.pending, q)
	id := lj.id
	lj.mu.Unlock()
	defer lj.forget(q)
	lj.say(fmt.Sprintf("permission %s waits for an answer: cline_job {\"jobId\": %q, \"action\": \"answer\", \"permissionId\": %q, \"allow\": true} (or false)", q.p.PermissionID, id, q.p.PermissionID))
	select {
	case allow := <-q.answer:
		if allow {
			return true, ""
		}
		return false, "denied by the user (answered on cline_job); do not retry"
	case <-ctx.Done():
		return false, ""
	}
}

// say adds an event to the job (once its run started).
func (lj *liveJob) say(msg string) {
	lj.mu.Lock()
	progress := lj.progress
	lj.mu.Unlock()
	if progress != nil {
		progress(msg)
	}
}

// started records the job's progress function.
func (lj *liveJob) started(progress func(string)) {
	lj.mu.Lock()
	lj.progress = progress
	lj.mu.Unlock()
}

func (lj *liveJob) forget(q *question) {
	lj.mu.Lock()
	defer lj.mu.Unlock()
	for i, x := range lj.pending {
		if x == q {
			lj.pending = append(lj.pending[:i], lj.pending[i+1:]...)
			return
		}
	}
}

// first is the oldest pending question, or nil.
func (lj *liveJob) first() *pendingPermission {
	lj.mu.Lock()
	defer lj.mu.Unlock()
	if len(lj.pending) == 0 {
		return nil
	}
	p := lj.pending[0].p
	return &p
}

// answer replies to a pending question.
func (lj *liveJob) answer(id string, allow bool) error {
	lj.mu.Lock()
	defer lj.mu.Unlock()
	for i, q := range lj.pending {
		if q.p.PermissionID == id {
			q.answer <- allow
			lj.pending = append(lj.pending[:i], lj.pending[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("no permission %s waits on this job (answered, timed out, or never asked)", id)
}

// live is the registry of running jobs' liveJobs, by job id.
type live struct {
	mu   sync.Mutex
	jobs map[string]*liveJob
}

func (l *live) get(id string) *liveJob {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.jobs[id]
}

// register files lj under its job's id, unless its run already ended.
func (l *live) register(id string, lj *liveJob) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lj.mu.Lock()
	defer lj.mu.Unlock()
	lj.id = id
	if lj.done {
		return
	}
	if l.jobs == nil {
		l.jobs = map[string]*liveJob{}
	}
	l.jobs[id] = lj
}

// finish ends lj when its run returned: it leaves the registry, and the steer messages it never
// delivered are returned for the result's warnings.
func (l *live) finish(lj *liveJob) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lj.mu.Lock()
	lj.done = true
	if l.jobs[lj.id] == lj {
		delete(l.jobs, lj.id)
	}
	lj.mu.Unlock()
	return lj.steer.Close()
}

// jobAsk is a background run's way to ask the user: elicitation when the starting request's
// stdio client has it, else questions kept on the job.
func (s *Server) jobAsk(start context.Context, lj *liveJob) run.AskFunc {
	// Over HTTP the starting request's stream is closed by then: the job keeps its questions.
	if session := elicitSession(start); session != nil && !s.http.Load() {
		return s.elicitAsk(session)
	}
	return lj.ask
}

// undelivered is the warning for steer messages a job's run never took.
func undelivered(left []string) string {
	return fmt.Sprintf("%d steer message(s) were not delivered: the run took no further turn (steering needs the ACP engine and a turn that ends by itself)", len(left))
}

// jobControl carries out cline_job's answer and steer on a running job.
func (s *Server) jobControl(a jobArguments) error {
	lj := s.live.get(a.JobID)
	if lj == nil {
		return fmt.Errorf("job %s is not running in this server: there is nothing to %s", a.JobID, a.Action)
	}
	if a.Action == actionSteer {
		if err := lj.steer.Push(a.Message); err != nil {
			return err
		}
		lj.say("steer message queued for the next turn: " + cut(a.Message, 100))
		return nil
	}
	if !permissionIDPattern.MatchString(a.PermissionID) {
		return fmt.Errorf("invalid arguments: permissionId must be the pendingPermission.permissionId of a status answer (got %s)", describe(a.PermissionID))
	}
	return lj.answer(a.PermissionID, a.Allow)
}

// withPending adds the running job's oldest pending permission to a cline_job answer.
func (s *Server) withPending(res *mcp.CallToolResult, id string) *mcp.CallToolResult {
	lj := s.live.get(id)
	if lj == nil {
		return res
	}
	p := lj.first()
	out, ok := res.StructuredContent.(jobOutput)
	if p == nil || !ok {
		return res
	}
	out.PendingPermission = p
	res.StructuredContent = out
	note := fmt.Sprintf("\n\nPermission %s waits for the user's answer: may Cline use %s", p.PermissionID, p.Tool)
	if len(p.Commands) > 0 {
		note += " to run " + strings.Join(p.Commands, " && ")
	}
	note += fmt.Sprintf("? Ask the user, then answer with {\"jobId\": %q, \"action\": \"answer\", \"permissionId\": %q, \"allow\": true} (or false).", id, p.PermissionID)
	for i, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			t.Text += note
			res.Content[i] = t
			break
		}
	}
	return res
}
