// Package jobs runs tool calls in the background and keeps their outcome: a job has an id, a
// state (running, succeeded, failed, cancelled), the progress messages of its run with sequence
// numbers (a client reads those after a cursor), and, when done, its result. Records are kept by
// bridge/store (one 0600 JSON file per job in a 0700 directory, written atomically, read without
// following a link), so a result survives a restart of the server; a job of a server that died is marked failed by the next one that starts, never
// left "running". A job ends at its overall limit, or when its run is silent for the idle limit.
//
// Everything stored is what the caller hands over: the bridge hands results and progress that
// run.Do already redacted. Ids are random, validated before they name a file.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/store"
)

// States of a job.
const (
	Running   = "running"
	Succeeded = "succeeded"
	Failed    = "failed"
	Cancelled = "cancelled"
)

// Event is one progress message of a job's run.
type Event struct {
	Seq  int       `json:"seq"`
	Time time.Time `json:"time"`
	Text string    `json:"text"`
}

// Job is one record.
type Job struct {
	ID      string    `json:"jobId"`
	Tool    string    `json:"tool"`
	State   string    `json:"state"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Owner is the server instance that runs (or ran) the job.
	Owner string `json:"owner"`
	// Tenant is the HTTP service's tenant that started the job ("" on stdio); only it sees it.
	Tenant string `json:"tenant,omitempty"`
	// Events are the latest progress messages (at most MaxEvents; Seq keeps counting).
	Events []Event `json:"events"`
	// Result is the finished job's result as the MCP layer built it; Error says why a job
	// failed without one (a limit, a dead server).
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Limits.
const (
	MaxEvents    = 1000
	maxEventText = 2000
	maxRecord    = 64 << 20
)

// ErrNotFound: no job with that id.
var ErrNotFound = errors.New("no such job")

var validID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// ValidID reports whether id can name a job.
func ValidID(id string) bool { return validID.MatchString(id) }

// Store keeps job records under Dir and runs jobs.
type Store struct {
	Dir string
	// Owner is this server's instance id; Dead reports whether another owner is gone.
	Owner string
	Dead  func(owner string) bool
	// MaxRun and Idle bound a job (0: 1 h and 10 min); Keep is how long a finished job is kept
	// (0: 7 days).
	MaxRun, Idle, Keep time.Duration

	mu      sync.Mutex
	running map[string]*live
	once    sync.Once
	st      store.Store[Job]
}

// live is a running job of this server.
type live struct {
	job    Job
	cancel context.CancelCauseFunc
	idle   *time.Timer
	dirty  bool
}

// Limit is a job's overall limit (MaxRun, or its default).
func (s *Store) Limit() time.Duration { return s.maxRun() }

// Retention is how long a finished job is kept (Keep, or its default).
func (s *Store) Retention() time.Duration { return s.keep() }

func (s *Store) maxRun() time.Duration  { return or(s.MaxRun, time.Hour) }
func (s *Store) idleMax() time.Duration { return or(s.Idle, 10*time.Minute) }
func (s *Store) keep() time.Duration    { return or(s.Keep, 7*24*time.Hour) }

func (s *Store) recs() *store.Store[Job] {
	s.once.Do(func() {
		s.st.Dir, s.st.Kind, s.st.Max, s.st.Valid = s.Dir, "job", maxRecord, ValidID
		s.st.ID = func(j Job) string { return j.ID }
		s.st.Time = func(j Job) time.Time { return j.Updated }
	})
	return &s.st
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Run is a job's work: it reports progress and returns the result to keep, whether it counts as a
// success, and its state when ctx ended (Cancelled, or Failed at a limit) is decided by the Store.
type Run func(ctx context.Context, progress func(string)) (result json.RawMessage, ok bool)

// Start records a new running job and runs fn in the background on a context of its own (not the
// request's), bounded by MaxRun and the idle limit. stop ends with the server: a job still running
// then is recorded cancelled.
func (s *Store) Start(stop context.Context, tool string, fn Run) (Job, error) {
	return s.StartFor(stop, "", tool, fn)
}

// StartFor is Start for a job of tenant.
func (s *Store) StartFor(stop context.Context, tenant, tool string, fn Run) (Job, error) {
	id := newID()
	now := time.Now().UTC()
	l := &live{job: Job{ID: id, Tool: tool, State: Running, Created: now, Updated: now, Owner: s.Owner, Tenant: tenant, Events: []Event{}}}
	if err := s.write(l.job); err != nil {
		return Job{}, err
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(stop))
	l.cancel = cancel
	s.mu.Lock()
	if s.running == nil {
		s.running = map[string]*live{}
	}
	s.running[id] = l
	s.mu.Unlock()
	j := l.job
	j.Events = []Event{}
	go s.run(stop, ctx, l, fn)
	return j, nil
}

var (
	errIdle     = errors.New("idle")
	errOverall  = errors.New("overall")
	errCancel   = errors.New("cancelled by the client")
	errShutdown = errors.New("the server stopped")
)

func (s *Store) run(stop, ctx context.Context, l *live, fn Run) {
	maxT := time.AfterFunc(s.maxRun(), func() { l.cancel(errOverall) })
	l.idle = time.AfterFunc(s.idleMax(), func() { l.cancel(errIdle) })
	unstop := context.AfterFunc(stop, func() { l.cancel(errShutdown) })
	flush := time.NewTicker(time.Second)
	done, flushed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-done:
				return
			case <-flush.C:
				s.flush(l)
			}
		}
	}()
	res, ok := fn(ctx, func(msg string) { s.progress(l, msg) })
	close(done)
	<-flushed // a progress write still under way never lands after the final record
	flush.Stop()
	maxT.Stop()
	l.idle.Stop()
	unstop()
	s.finish(l, res, ok, context.Cause(ctx))
}

func (s *Store) progress(l *live, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.idle.Reset(s.idleMax())
	seq := 1
	if n := len(l.job.Events); n > 0 {
		seq = l.job.Events[n-1].Seq + 1
	}
	if len(msg) > maxEventText {
		msg = msg[:maxEventText] + "…"
	}
	l.job.Events = append(l.job.Events, Event{Seq: seq, Time: time.Now().UTC(), Text: msg})
	if len(l.job.Events) > MaxEvents {
		l.job.Events = slices.Delete(l.job.Events, 0, len(l.job.Events)-MaxEvents)
	}
	l.job.Updated = time.Now().UTC()
	l.dirty = true
}

func (s *Store) flush(l *live) {
	s.mu.Lock()
	if !l.dirty {
		s.mu.Unlock()
		return
	}
	j := l.job
	j.Events = slices.Clone(j.Events)
	l.dirty = false
	s.mu.Unlock()
	_ = s.write(j)
}

func (s *Store) finish(l *live, res json.RawMessage, ok bool, cause error) {
	s.mu.Lock()
	j := l.job
	j.Events = slices.Clone(j.Events)
	s.mu.Unlock()
	// Written before the job leaves the running set, so a reader never finds it gone from both.
	defer func() {
		s.mu.Lock()
		delete(s.running, j.ID)
		s.mu.Unlock()
	}()
	j.Result, j.Updated = res, time.Now().UTC()
	switch {
	case errors.Is(cause, errCancel), errors.Is(cause, errShutdown):
		j.State = Cancelled
		j.Error = cause.Error()
	case errors.Is(cause, errOverall):
		j.State, j.Error = Failed, fmt.Sprintf("the job ran longer than its limit of %s (--job-max)", s.maxRun())
	case errors.Is(cause, errIdle):
		j.State, j.Error = Failed, fmt.Sprintf("the job's run said nothing for %s (--job-idle)", s.idleMax())
	case ok:
		j.State = Succeeded
	default:
		j.State = Failed
	}
	_ = s.write(j)
}

// Cancel cancels a running job of this server; the run's own cleanup still runs and the job ends
// cancelled. A job that is not running here is reported as it is.
func (s *Store) Cancel(id string) (Job, error) {
	s.mu.Lock()
	l := s.running[id]
	s.mu.Unlock()
	if l != nil {
		l.cancel(errCancel)
	}
	return s.Get(id)
}

// Stop cancels this server's running jobs (they end cancelled, "the server stopped", after their
// run's cleanup) and waits for them until ctx ends.
func (s *Store) Stop(ctx context.Context) {
	s.mu.Lock()
	for _, l := range s.running {
		l.cancel(errShutdown)
	}
	s.mu.Unlock()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		n := len(s.running)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Get returns a job: a running one of this server as it is now, others from disk.
func (s *Store) Get(id string) (Job, error) {
	if !ValidID(id) {
		return Job{}, fmt.Errorf("%w: %q is not a job id", ErrNotFound, id)
	}
	s.mu.Lock()
	if l := s.running[id]; l != nil {
		j := l.job
		j.Events = slices.Clone(j.Events)
		s.mu.Unlock()
		return j, nil
	}
	s.mu.Unlock()
	return s.read(id)
}

// Wait blocks until the job is no longer running in this server or ctx ends.
func (s *Store) Wait(ctx context.Context, id string) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		_, run := s.running[id]
		s.mu.Unlock()
		if !run {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Save records a finished job (a large synchronous result kept for paging).
func (s *Store) Save(tool string, result json.RawMessage, ok bool) (Job, error) {
	return s.SaveFor("", tool, result, ok)
}

// SaveFor is Save for a result of tenant.
func (s *Store) SaveFor(tenant, tool string, result json.RawMessage, ok bool) (Job, error) {
	now := time.Now().UTC()
	j := Job{ID: newID(), Tool: tool, State: Failed, Created: now, Updated: now, Owner: s.Owner, Tenant: tenant, Events: []Event{}, Result: result}
	if ok {
		j.State = Succeeded
	}
	return j, s.write(j)
}

// Recover marks the running jobs of dead servers failed and removes finished jobs older than Keep;
// it returns how many it marked and removed, and the records it could not read.
func (s *Store) Recover(now time.Time) (marked, removed int, bad []string) {
	all, bad := s.recs().List()
	for _, j := range all {
		if j.State == Running && j.Owner != s.Owner && s.Dead != nil && s.Dead(j.Owner) {
			j.State, j.Error, j.Updated = Failed, "the server that ran this job stopped before it finished", now.UTC()
			if s.write(j) == nil {
				marked++
			}
		}
	}
	gone := s.recs().Expire(now, s.keep(), func(j Job) bool { return j.State == Running })
	return marked, len(gone), bad
}

func (s *Store) read(id string) (Job, error) {
	j, err := s.recs().Get(id)
	if errors.Is(err, store.ErrNotFound) {
		return Job{}, fmt.Errorf("%w: %s (unknown, or expired)", ErrNotFound, id)
	}
	return j, err
}

func (s *Store) write(j Job) error { return s.recs().Put(j) }

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// After returns the events after cursor (a Seq), and the cursor to ask with next time.
func (j Job) After(cursor int) ([]Event, int) {
	out := []Event{}
	next := cursor
	for _, e := range j.Events {
		if e.Seq > cursor {
			out = append(out, e)
			next = e.Seq
		}
	}
	return out, next
}
