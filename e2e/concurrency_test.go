package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// background runs a tool call without waiting for it; wait returns its result.
type background struct {
	done chan struct{}
	res  *mcp.CallToolResult
	err  error
}

func (e *env) launch(tool string, args map[string]any, token any) *background {
	return e.startOn(e.sess, tool, args, token)
}

func (e *env) startOn(s *mcpsession.Session, tool string, args map[string]any, token any) *background {
	b := &background{done: make(chan struct{})}
	if _, ok := args["cwd"]; !ok {
		args["cwd"] = e.work
	}
	go func() {
		defer close(b.done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		b.res, b.err = s.CallErr(ctx, tool, args, token)
	}()
	return b
}

func (b *background) wait(t *testing.T) map[string]any {
	t.Helper()
	<-b.done
	if b.err != nil {
		t.Fatalf("call: %v", b.err)
	}
	return mcpsession.Structured(t, b.res)
}

// progressOf returns the progress messages sent for token.
func progressOf(s *mcpsession.Session, token string) []string {
	var out []string
	for _, n := range s.Notifications("notifications/progress") {
		if n.Params.AdditionalFields["progressToken"] == token {
			m, _ := n.Params.AdditionalFields["message"].(string)
			out = append(out, m)
		}
	}
	return out
}

func waitProgress(t *testing.T, s *mcpsession.Session, token, substr string) {
	t.Helper()
	if !mcpsession.Eventually(30*time.Second, func() bool {
		return slices.ContainsFunc(progressOf(s, token), func(m string) bool { return strings.Contains(m, substr) })
	}) {
		t.Fatalf("no progress %q for %s; got %q", substr, token, progressOf(s, token))
	}
}

func (e *env) waitRecords(n int) []mcpsession.Record {
	e.t.Helper()
	if !mcpsession.Eventually(30*time.Second, func() bool { return len(e.records()) >= n }) {
		e.t.Fatalf("got %d CLI runs, want %d", len(e.records()), n)
	}
	return e.records()
}

// TestTwoServersShareProvidersJSON: two servers (two MCP clients side by side) on one providers.json.
// Each starts three override calls that refresh the token of their own OAuth provider and hold;
// while they hold, both serve default calls, which must see the user's defaults (the overrides live
// in private copies, not in the shared file). Then the overrides end together, and both servers
// merge their refreshes back at once: every refresh is kept, the file is whole, and no override
// reached it.
func TestTwoServersShareProvidersJSON(t *testing.T) {
	a := newEnv(t)
	b := newEnvLike(t, a)
	const perServer = 3
	a.writeProviders(withOAuthProviders(t, mcpsession.ProvidersTwo, 2*perServer))
	release := filepath.Join(a.root, "release")

	var overrides []*background
	for i := 0; i < 2*perServer; i++ {
		s := a.sess
		if i >= perServer {
			s = b.sess
		}
		id := fmt.Sprintf("tok-%d", i)
		overrides = append(overrides, a.startOn(s, "ask_cline", map[string]any{
			"prompt":   fmt.Sprintf("go fake:token_refresh?token=%s-new&wait_file=%s", id, release),
			"provider": id, "model": "override-" + id,
		}, nil))
	}
	a.waitRecords(2 * perServer)
	p := a.readProviders()
	for i := 0; i < 2*perServer; i++ {
		id := fmt.Sprintf("tok-%d", i)
		if got := mcpsession.Dig(p, "providers", id, "settings", "model"); got != "saved-"+id {
			t.Errorf("while the overrides run, %s model is %v in the user's file, want saved-%s", id, got, id)
		}
	}

	for _, s := range []*mcpsession.Session{a.sess, a.sess, b.sess, b.sess} {
		sc := a.startOn(s, "ask_cline", map[string]any{"prompt": "go fake:pong"}, nil).wait(t)
		if sc["ok"] != true {
			t.Errorf("default call failed: %v", sc["message"])
		}
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, o := range overrides {
		if sc := o.wait(t); sc["ok"] != true {
			t.Errorf("override call failed: %v", sc["message"])
		} else if w, _ := sc["warnings"].([]any); len(w) != 0 {
			t.Errorf("override call warned: %v", w)
		}
	}

	p = a.readProviders() // fails if not valid JSON
	if p["lastUsedProvider"] != "openai-compatible" || mcpsession.Dig(p, "providers", "openai-compatible", "settings", "model") != "fake-model" {
		t.Errorf("the defaults changed: lastUsedProvider %v, model %v", p["lastUsedProvider"], mcpsession.Dig(p, "providers", "openai-compatible", "settings", "model"))
	}
	for i := 0; i < 2*perServer; i++ {
		id := fmt.Sprintf("tok-%d", i)
		if got := mcpsession.Dig(p, "providers", id, "settings", "auth", "accessToken"); got != id+"-new" {
			t.Errorf("%s token %v, want %s-new: a refresh was lost", id, got, id)
		}
		if got := mcpsession.Dig(p, "providers", id, "settings", "model"); got != "saved-"+id {
			t.Errorf("%s model %v, want saved-%s", id, got, id)
		}
	}
	defaults := 0
	for _, r := range a.records() {
		if r.RefreshedToken != "" {
			continue
		}
		defaults++
		if r.Provider != "openai-compatible" || r.Model != "fake-model" {
			t.Errorf("a default run saw provider %q model %q, want openai-compatible fake-model", r.Provider, r.Model)
		}
	}
	if defaults != 4 {
		t.Errorf("got %d default runs, want 4", defaults)
	}
	if lock := a.providers + ".lock"; !fileExists(lock) {
		t.Errorf("no cross-process lock file %s", lock)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestApplyOnOneCheckoutOneAtATime: two apply_cline_edits on one checkout run one after the other,
// so each diff holds exactly its own run's file; while the first holds the checkout, the second is
// queued (and says so), and analysis calls on the same repository still run.
func TestApplyOnOneCheckoutOneAtATime(t *testing.T) {
	e := newEnv(t)
	gitInit(t, e.work, map[string]string{"README.md": "hello\n"})
	release := filepath.Join(e.root, "release")
	first := e.launch("apply_cline_edits", map[string]any{"prompt": "go fake:edit?path=a.txt&content=A&wait_file=" + release}, "apply-a")
	e.waitRecords(1)
	second := e.launch("apply_cline_edits", map[string]any{"prompt": "go fake:edit?path=b.txt&content=B", "cwd": filepath.Join(e.work, ".")}, "apply-b")
	waitProgress(t, e.sess, "apply-b", "queued, position 1")

	for _, tool := range []string{"ask_cline", "ask_cline_workspace"} {
		if sc := e.launch(tool, map[string]any{"prompt": "go fake:pong"}, nil).wait(t); sc["ok"] != true {
			t.Errorf("%s on the same repository failed while an apply held it: %v", tool, sc["message"])
		}
	}
	if n := len(e.records()); n != 3 {
		t.Fatalf("got %d CLI runs while the first apply held the checkout, want 3 (the second apply must wait)", n)
	}
	releaseAndWantDisjointDiffs(t, release, first, second)
}

// TestMaxConcurrentBoundsRuns: with --max-concurrent 2, five calls at once never run more than two
// CLIs together; the three others wait in line and say where they stand.
func TestMaxConcurrentBoundsRuns(t *testing.T) {
	e := newEnv(t, "--max-concurrent", "2")
	release := filepath.Join(e.root, "release")
	count := filepath.Join(e.root, "running")
	var calls []*background
	for i := 0; i < 5; i++ {
		calls = append(calls, e.launch("ask_cline", map[string]any{
			"prompt": fmt.Sprintf("go %d fake:pong?wait_file=%s&count_dir=%s", i, release, count)}, fmt.Sprintf("call-%d", i)))
	}
	e.waitRecords(2)
	// Three calls wait; between them they are told positions 1, 2 and 3.
	if !mcpsession.Eventually(30*time.Second, func() bool {
		var seen []string
		for i := 0; i < 5; i++ {
			for _, m := range progressOf(e.sess, fmt.Sprintf("call-%d", i)) {
				if strings.HasPrefix(m, "queued, position ") {
					seen = append(seen, m[:len("queued, position 1")])
				}
			}
		}
		return slices.Contains(seen, "queued, position 1") && slices.Contains(seen, "queued, position 2") && slices.Contains(seen, "queued, position 3")
	}) {
		t.Fatal("the waiting calls were not told positions 1, 2 and 3")
	}
	if n := len(e.records()); n != 2 {
		t.Fatalf("%d CLIs started while two held the slots, want 2", n)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if sc := c.wait(t); sc["ok"] != true {
			t.Errorf("call failed: %v", sc["message"])
		}
	}
	recs := e.records()
	if len(recs) != 5 {
		t.Fatalf("got %d runs, want 5", len(recs))
	}
	peak := 0
	for _, r := range recs {
		peak = max(peak, r.Concurrent)
	}
	if peak != 2 {
		t.Errorf("at most %d CLIs ran at once, want exactly 2", peak)
	}
}

// TestQueuedCallCancelledNeverSpawns: a call waiting for a slot that the client cancels never starts
// Cline, gets no response, and leaves no trace in the line: the next call runs.
func TestQueuedCallCancelledNeverSpawns(t *testing.T) {
	e := newEnv(t, "--max-concurrent", "1")
	release := filepath.Join(e.root, "release")
	first := e.launch("ask_cline", map[string]any{"prompt": "go fake:pong?wait_file=" + release}, nil)
	e.waitRecords(1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = e.sess.CallErr(ctx, "ask_cline", map[string]any{"prompt": "queued call", "cwd": e.work}, "queued")
	})
	waitProgress(t, e.sess, "queued", "queued, position 1")
	cancel()
	wg.Wait()
	wantWithheld(t, e.sess, "cancelled while it was queued")
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if sc := first.wait(t); sc["ok"] != true {
		t.Fatalf("first call failed: %v", sc["message"])
	}
	if n := len(e.records()); n != 1 {
		t.Fatalf("got %d CLI runs, want 1: the cancelled queued call must never spawn", n)
	}
	if sc := e.launch("ask_cline", map[string]any{"prompt": "go fake:pong"}, nil).wait(t); sc["ok"] != true {
		t.Fatalf("a call after the cancelled one failed: %v", sc["message"])
	}
	if n := len(e.records()); n != 2 {
		t.Errorf("got %d CLI runs, want 2", n)
	}
}

// TestApplyOnOneCheckoutAcrossServers: two servers (two MCP clients in one project) apply on the same
// checkout: the second waits for the first — it says so — and each diff holds only its own file.
func TestApplyOnOneCheckoutAcrossServers(t *testing.T) {
	a := newEnv(t)
	b := newEnvLike(t, a)
	gitInit(t, a.work, map[string]string{"README.md": "hello\n"})
	release := filepath.Join(a.root, "release")
	first := a.launch("apply_cline_edits", map[string]any{"prompt": "go fake:edit?path=a.txt&content=A&wait_file=" + release}, "apply-a")
	a.waitRecords(1)
	second := b.launch("apply_cline_edits", map[string]any{"prompt": "go fake:edit?path=b.txt&content=B"}, "apply-b")
	waitProgress(t, b.sess, "apply-b", "another cline-mcp process runs apply_cline_edits on this checkout")
	if n := len(a.records()); n != 1 {
		t.Fatalf("got %d CLI runs while the other server's apply held the checkout, want 1", n)
	}
	releaseAndWantDisjointDiffs(t, release, first, second)
}

// releaseAndWantDisjointDiffs lets the held first apply (it wrote a.txt) go on and checks that it and
// the queued second one (b.txt) each report exactly their own file.
func releaseAndWantDisjointDiffs(t *testing.T, release string, first, second *background) {
	t.Helper()
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    *background
		want string
	}{{first, "a.txt"}, {second, "b.txt"}} {
		sc := c.b.wait(t)
		if sc["ok"] != true {
			t.Fatalf("apply failed: %v", sc["message"])
		}
		if files := mcpsession.ChangedFiles(sc); len(files) != 1 || files[c.want] == "" {
			t.Errorf("diff of the run that wrote %s holds %v, want only its own file", c.want, files)
		}
	}
}
