package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/redact"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// The engines run from a Turn alone: these tests build one with no call and no runner behind it.

// execFunc is an executor made of a function.
type execFunc func(ctx context.Context, spec sandbox.Spec) (sandbox.Exit, error)

func (f execFunc) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Exit, error) {
	return f(ctx, spec)
}

// redactor is the narrow face of a call's redactor.
type redactor struct{ r *redact.Redactor }

func (x *redactor) NewTail(n int) *redact.Tail { return x.r.NewTail(n) }
func (x *redactor) Text(s string) string       { return x.r.Text(s) }
func (x *redactor) Learn(v ...string)          { x.r = x.r.With(v...) }

// budget counts how the engine used it.
type budget struct{ follows, unfollows int }

func (b *budget) Follow(context.CancelFunc)             { b.follows++ }
func (b *budget) Unfollow()                             { b.unfollows++ }
func (b *budget) SetCost(float64)                       {}
func (b *budget) WatchesCost() bool                     { return false }
func (b *budget) Verdict(v cline.Verdict) cline.Verdict { return v }
func (b *budget) OverAtEnd() string                     { return "" }

// replay is an executor that writes a recording of the real CLI to the run's output.
func replay(t *testing.T, name string) sandbox.Executor {
	t.Helper()
	out, err := os.ReadFile(filepath.Join("..", "..", "cline", "testdata", "recordings", name, "stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return execFunc(func(_ context.Context, spec sandbox.Spec) (sandbox.Exit, error) {
		_, _ = io.WriteString(spec.Stdout, string(out))
		return sandbox.Exit{Code: 0, Duration: time.Second}, nil
	})
}

// TestJSONTurnFacts: a --json turn of an edit (a successful mutating tool call) reports that it ran,
// its tool calls, that it may have written, an OK verdict and its redacted tail; the budget followed
// the turn once; every event reached the call's sink.
func TestJSONTurnFacts(t *testing.T) {
	b, events := &budget{}, 0
	red := &redactor{r: redact.New(nil)}
	f := JSON{}.Run(t.Context(), Turn{N: 1, Exec: replay(t, "b_edit_autoapprove_true"), Deadline: time.Now().Add(time.Hour),
		TimeoutSeconds: 3600, Progress: func(string) {}, Event: func(cline.Event) { events++ }, Red: red, Budget: b})
	if f.Err != nil || !f.Ran || !f.Verdict.OK || f.ToolCalls == 0 || !f.MayHaveWritten {
		t.Fatalf("facts %+v", f)
	}
	if f.StdoutTail == "" || events == 0 {
		t.Errorf("tail %q, %d events", f.StdoutTail, events)
	}
	if b.follows != 1 || b.unfollows != 1 {
		t.Errorf("budget followed %d, unfollowed %d times; want once each", b.follows, b.unfollows)
	}
}

// TestTurnThatCannotStart: an executor that cannot start the run is a fact (Err) the call maps,
// not a verdict; a deadline that had passed by then is said too.
func TestTurnThatCannotStart(t *testing.T) {
	red := &redactor{r: redact.New(nil)}
	boom := errors.New("image not found")
	for _, tc := range []struct {
		name     string
		deadline time.Time
	}{
		{"within the call's time", time.Now().Add(time.Hour)},
		{"after the call's deadline", time.Now().Add(-time.Second)},
	} {
		exec := execFunc(func(ctx context.Context, _ sandbox.Spec) (sandbox.Exit, error) {
			if ctx.Err() != nil {
				return sandbox.Exit{}, ctx.Err()
			}
			return sandbox.Exit{}, boom
		})
		f := JSON{}.Run(t.Context(), Turn{N: 1, Exec: exec, Deadline: tc.deadline, Progress: func(string) {},
			Event: func(cline.Event) {}, Red: red, Budget: &budget{}})
		past := tc.deadline.Before(time.Now())
		if f.Err == nil || f.Ran || f.Verdict.Kind != "" || f.Deadline != past {
			t.Errorf("%s: facts %+v", tc.name, f)
		}
	}
}

// TestACPEnvReadsTheProviderBeforeTheRun: the ACP engine gives the process the provider and key of
// the providers.json it is handed, learns the key as a secret of the call, and keeps the model for
// the turn; the JSON engine adds nothing.
func TestACPEnvReadsTheProviderBeforeTheRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "providers.json")
	doc := `{"lastUsedProvider":"openai","providers":{"openai":{"settings":{"apiKey":"sk-test-0123456789abcdef","model":"gpt-4o"}}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	red := &redactor{r: redact.New(nil)}
	extra := map[string]string{}
	p := NewACP(0, time.Minute, nil).Env(path, "", extra, red)
	if p.ID != "openai" || p.Model != "gpt-4o" || extra["CLINE_PROVIDER"] != "openai" || extra["CLINE_API_KEY"] != "sk-test-0123456789abcdef" {
		t.Errorf("provider %+v, env %v", p, extra)
	}
	if got := red.Text("key sk-test-0123456789abcdef"); strings.Contains(got, "sk-test-0123456789abcdef") {
		t.Errorf("the key was not learned: %q", got)
	}
	none := map[string]string{}
	if p := (JSON{}).Env(path, "", none, red); p != (Provider{}) || len(none) != 0 {
		t.Errorf("JSON engine: provider %+v, env %v", p, none)
	}
}
