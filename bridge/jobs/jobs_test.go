package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func newStore(t *testing.T) *Store {
	return &Store{Dir: filepath.Join(t.TempDir(), "jobs"), Owner: "host-1-1", Idle: time.Minute}
}

// TestJobLifecycle: a job runs in the background, its progress is read after a cursor, its
// result and state are kept on disk (0600) and read back by a new Store.
func TestJobLifecycle(t *testing.T) {
	s := newStore(t)
	release, reported := make(chan struct{}), make(chan struct{})
	j, err := s.Start(t.Context(), "ask_cline", func(ctx context.Context, progress func(string)) (json.RawMessage, bool) {
		for i := range 5 {
			progress(fmt.Sprintf("step %d", i))
		}
		close(reported)
		<-release
		return json.RawMessage(`{"ok":true}`), true
	})
	if err != nil || j.State != Running {
		t.Fatalf("start: %+v %v", j, err)
	}
	<-reported
	got, _ := s.Get(j.ID)
	evs, next := got.After(2)
	if len(evs) != 3 || next != 5 || evs[0].Text != "step 2" {
		t.Errorf("events after 2: %+v next %d", evs, next)
	}
	close(release)
	s.Wait(t.Context(), j.ID)
	fresh := &Store{Dir: s.Dir}
	done, err := fresh.Get(j.ID)
	if err != nil || done.State != Succeeded || string(done.Result) != `{"ok":true}` || len(done.Events) != 5 {
		t.Fatalf("from disk: %+v %v", done, err)
	}
	fi, err := os.Stat(filepath.Join(s.Dir, j.ID+".json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v %v", fi, err)
	}
}

// TestJobLimitsAndCancel: cancel, the idle limit and the overall limit end a job's context and
// name the cause; Stop cancels what runs.
func TestJobLimitsAndCancel(t *testing.T) {
	blocked := func(ctx context.Context, _ func(string)) (json.RawMessage, bool) {
		<-ctx.Done()
		return nil, false
	}
	s := newStore(t)
	s.Idle, s.MaxRun = 150*time.Millisecond, time.Hour
	idle, _ := s.Start(t.Context(), "t", blocked)
	s.Wait(t.Context(), idle.ID)
	// The error names the flag that sets the limit, as cline-mcp spells it.
	if j, _ := s.Get(idle.ID); j.State != Failed || !strings.Contains(j.Error, "(--job-idle)") {
		t.Errorf("idle: %+v", j)
	}
	s.Idle, s.MaxRun = time.Hour, 150*time.Millisecond
	over, _ := s.Start(t.Context(), "t", blocked)
	s.Wait(t.Context(), over.ID)
	if j, _ := s.Get(over.ID); j.State != Failed || !strings.Contains(j.Error, "(--job-max)") {
		t.Errorf("overall: %+v", j)
	}
	s.MaxRun = time.Hour
	c, _ := s.Start(t.Context(), "t", blocked)
	if _, err := s.Cancel(c.ID); err != nil {
		t.Fatal(err)
	}
	s.Wait(t.Context(), c.ID)
	if j, _ := s.Get(c.ID); j.State != Cancelled {
		t.Errorf("cancel: %+v", j)
	}
	st, _ := s.Start(t.Context(), "t", blocked)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	s.Stop(ctx)
	if j, _ := s.Get(st.ID); j.State != Cancelled {
		t.Errorf("stop: %+v", j)
	}
}

// TestRecover: a running job of a dead owner is marked failed, of a live one left alone; an old
// finished job is removed; a corrupt record and a hostile id are refused.
func TestRecover(t *testing.T) {
	s := newStore(t)
	s.Keep = time.Hour
	old := time.Now().Add(-2 * time.Hour)
	for _, j := range []Job{
		{ID: newID(), State: Running, Owner: "dead", Created: old, Updated: old},
		{ID: newID(), State: Running, Owner: "alive", Created: old, Updated: old},
		{ID: newID(), State: Succeeded, Owner: "x", Created: old, Updated: old},
	} {
		if err := s.write(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.Dir, newID()+".json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Dead = func(o string) bool { return o == "dead" }
	marked, removed, bad := s.Recover(time.Now())
	if marked != 1 || removed != 1 || len(bad) != 1 {
		t.Errorf("recover: marked %d removed %d bad %v", marked, removed, bad)
	}
	for _, id := range []string{"../x", "", "0123", "ABCDEF0123456789abcdef0123456789"} {
		if _, err := s.Get(id); err == nil {
			t.Errorf("Get(%q) succeeded", id)
		}
	}
}

// TestConcurrentProgress: many jobs reporting at once (run with -race).
func TestConcurrentProgress(t *testing.T) {
	s := newStore(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, err := s.Start(t.Context(), "t", func(_ context.Context, p func(string)) (json.RawMessage, bool) {
				for i := range 1500 {
					p(fmt.Sprint(i))
				}
				return json.RawMessage(`{}`), true
			})
			if err != nil {
				t.Error(err)
				return
			}
			s.Wait(t.Context(), j.ID)
			got, _ := s.Get(j.ID)
			if len(got.Events) != MaxEvents || got.Events[len(got.Events)-1].Seq != 1500 {
				t.Errorf("events kept %d, last seq %d", len(got.Events), got.Events[len(got.Events)-1].Seq)
			}
		}()
	}
	wg.Wait()
}
