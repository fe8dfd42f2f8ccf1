package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

func (e *env) writeProviders(s string) {
	e.t.Helper()
	mcpsession.WriteSettings(e.t, e.providers, s)
}

func (e *env) readProviders() map[string]any {
	e.t.Helper()
	return mcpsession.ReadJSON(e.t, e.providers)
}

func dig(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

func TestOverrideRestoresTrackedFieldsAndKeepsRefreshedToken(t *testing.T) {
	e := newEnv(t)
	e.writeProviders(mcpsession.ProvidersTwo)
	res, sc := e.call("ask_cline", map[string]any{
		"prompt":   "Reply fake:token_refresh?token=tok-refreshed-1",
		"provider": "openai-native",
		"model":    "gpt-override",
	})
	wantOK(t, res, sc)
	rec := e.records()
	if len(rec) != 1 || !hasPair(rec[0].Argv, "-P", "openai-native") || !hasPair(rec[0].Argv, "-m", "gpt-override") {
		t.Fatalf("override flags not passed: %+v", rec)
	}
	p := e.readProviders()
	if got := p["lastUsedProvider"]; got != "openai-compatible" {
		t.Errorf("lastUsedProvider: got %v, want openai-compatible restored", got)
	}
	if got := dig(p, "providers", "openai-native", "settings", "model"); got != "gpt-saved" {
		t.Errorf("openai-native model: got %v, want gpt-saved restored", got)
	}
	if got := dig(p, "providers", "openai-native", "settings", "reasoning", "effort"); got != "low" {
		t.Errorf("openai-native reasoning: got %v, want low", got)
	}
	if got := dig(p, "providers", "openai-native", "settings", "auth", "accessToken"); got != "tok-refreshed-1" {
		t.Errorf("refreshed token: got %v, want tok-refreshed-1 kept", got)
	}
	if got := dig(p, "providers", "openai-compatible", "settings", "apiKey"); got != "sk-test-123" {
		t.Errorf("other provider damaged: apiKey %v", got)
	}
	st, err := os.Stat(e.providers)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("providers.json mode %v, want 0600", st.Mode().Perm())
	}
}

func TestOverrideNewProviderBlockKept(t *testing.T) {
	e := newEnv(t)
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Reply please", "provider": "lmstudio", "model": "some-model"})
	wantOK(t, res, sc)
	p := e.readProviders()
	if got := p["lastUsedProvider"]; got != "openai-compatible" {
		t.Errorf("lastUsedProvider: got %v, want openai-compatible", got)
	}
	if got := dig(p, "providers", "lmstudio", "settings", "model"); got != "some-model" {
		t.Errorf("the block Cline created must be kept whole; lmstudio model = %v", got)
	}
}

func TestCorruptSettingsUntouchedWithWarning(t *testing.T) {
	e := newEnv(t)
	corrupt := "{ this is not json\n"
	e.writeProviders(corrupt)
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Reply please", "model": "x-model"})
	wantOK(t, res, sc)
	b, err := os.ReadFile(e.providers)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != corrupt {
		t.Errorf("the unparseable file changed: %q", b)
	}
	ws := fmt.Sprint(sc["warnings"])
	if !strings.Contains(ws, "providers.json") && !strings.Contains(ws, "settings") {
		t.Errorf("no warning about the unparseable settings file: %v", ws)
	}
}

func TestInvalidEntryWipeIsRepaired(t *testing.T) {
	e := newEnv(t)
	// One schema-invalid entry makes the real CLI overwrite the whole file with a single `cline`
	// entry (o_invalid_providers_json_entry); the bridge puts the lost providers back.
	bad := strings.Replace(mcpsession.ProvidersTwo, `"model": "gpt-saved",`, `"model": "gpt-saved", "baseUrl": "not a url",`, 1)
	e.writeProviders(bad)
	res, sc := e.call("ask_cline", map[string]any{"prompt": "Reply please"})
	wantOK(t, res, sc)
	p := e.readProviders()
	if dig(p, "providers", "openai-compatible", "settings", "apiKey") != "sk-test-123" || dig(p, "providers", "openai-native", "settings", "apiKey") != "sk-native-456" {
		t.Errorf("providers lost by the CLI's wipe were not restored: %v", p)
	}
	if !strings.Contains(fmt.Sprint(sc["warnings"]), "openai") {
		t.Errorf("no warning naming the restored providers: %v", sc["warnings"])
	}
}

// TestLockDiscipline: default calls overlap each other; override calls overlap nothing. Each
// run takes at least minRun, so an override overlaps another run exactly when their starts are
// less than minRun apart. Two default runs shared the read lock when one started well before
// the other's call returned (a call releases its lock just before it returns).
func TestLockDiscipline(t *testing.T) {
	e := newEnv(t)
	e.writeProviders(mcpsession.ProvidersTwo)
	const minRun = 3 * time.Second
	var wg sync.WaitGroup
	var mu sync.Mutex
	returned := map[string]time.Time{} // by prompt
	launch := func(args map[string]any) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args["cwd"] = e.work
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res := e.sess.Call(ctx, "ask_cline", args)
			mu.Lock()
			returned[args["prompt"].(string)] = time.Now()
			mu.Unlock()
			if sc := mcpsession.Structured(t, res); sc["ok"] != true {
				t.Errorf("call failed: %v", sc["message"])
			}
		}()
	}
	for i := 0; i < 3; i++ {
		launch(map[string]any{"prompt": fmt.Sprintf("go fake:slow?seconds=3&interval_ms=500&n=d%d", i)})
	}
	// The lock is FIFO: arrivals alternating default/override would rightly serialise
	// everything, so the overrides arrive after the defaults are running.
	if !eventually(30*time.Second, func() bool { return len(e.records()) >= 3 }) {
		t.Fatalf("the default runs did not start together; got %d running", len(e.records()))
	}
	for i := 0; i < 2; i++ {
		launch(map[string]any{"prompt": fmt.Sprintf("go fake:slow?seconds=3&interval_ms=500&n=o%d", i), "model": fmt.Sprintf("m-%d", i)})
	}
	wg.Wait()
	recs := e.records()
	if len(recs) != 5 {
		t.Fatalf("got %d runs, want 5", len(recs))
	}
	type run struct {
		start, returned time.Time
		override        bool
	}
	var runs []run
	for _, r := range recs {
		prompt := r.Argv[len(r.Argv)-1]
		runs = append(runs, run{r.StartedAt, returned[strings.TrimSpace(prompt)], contains(r.Argv, "-m")})
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].start.Before(runs[j].start) })
	defaultsShared := false
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			if (runs[i].override || runs[j].override) && runs[j].start.Sub(runs[i].start) < minRun-100*time.Millisecond {
				t.Errorf("an override run overlapped another run (starts %v apart)", runs[j].start.Sub(runs[i].start))
			}
			// A full second of margin: a run that merely started as the other's response was
			// on its way would not count.
			if !runs[i].override && !runs[j].override && runs[i].returned.Sub(runs[j].start) > time.Second {
				defaultsShared = true
			}
		}
	}
	if !defaultsShared {
		t.Errorf("no default run started while another default call was still running; they must share the read lock")
	}
	if p := e.readProviders(); p["lastUsedProvider"] != "openai-compatible" || dig(p, "providers", "openai-compatible", "settings", "model") != "fake-model" {
		t.Errorf("tracked fields not restored after concurrent overrides: %v", p)
	}
}

func TestQueuedOverrideCancelledNeverSpawns(t *testing.T) {
	e := newEnv(t)
	first := make(chan struct{})
	go func() {
		defer close(first)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		e.sess.Call(ctx, "ask_cline", map[string]any{"prompt": "go fake:slow?seconds=3&interval_ms=500", "model": "m1", "cwd": e.work})
	}()
	if !eventually(20*time.Second, func() bool { return len(e.records()) == 1 }) {
		t.Fatal("the first override run never started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.sess.CallErr(ctx, "ask_cline", map[string]any{"prompt": "queued call", "model": "m2", "cwd": e.work}, nil)
	}()
	// The second call can only be queued: the first holds the write lock for 3 s.
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	wantWithheld(t, e.sess, "waited for the settings lock")
	<-first
	if n := len(e.records()); n != 1 {
		t.Errorf("got %d CLI runs, want 1: the cancelled queued call must never spawn", n)
	}
}

func TestStressMixedOverrides(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test (skipped with -short)")
	}
	e := newEnv(t)
	e.writeProviders(mcpsession.ProvidersTwo)
	const n = 100
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			args := map[string]any{"prompt": "go fake:pong", "cwd": e.work}
			if i%2 == 0 {
				args["prompt"] = fmt.Sprintf("go fake:token_refresh?token=tok-%03d", i)
				args["provider"] = "openai-native"
				args["model"] = fmt.Sprintf("gpt-%d", i)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			res := e.sess.Call(ctx, "ask_cline", args)
			if sc := mcpsession.Structured(t, res); sc["ok"] != true {
				t.Errorf("call %d failed: %v %v", i, sc["kind"], sc["message"])
			}
		}(i)
	}
	wg.Wait()
	p := e.readProviders() // fails the test if corrupt
	// The last override run (by start time; they are serialised) wrote the final token.
	var lastToken string
	var lastStart time.Time
	for _, r := range e.records() {
		if r.RefreshedToken != "" && r.StartedAt.After(lastStart) {
			lastStart, lastToken = r.StartedAt, r.RefreshedToken
		}
	}
	if got := dig(p, "providers", "openai-native", "settings", "auth", "accessToken"); got != lastToken {
		t.Errorf("final token %v, want the last one written %q", got, lastToken)
	}
	if p["lastUsedProvider"] != "openai-compatible" || dig(p, "providers", "openai-native", "settings", "model") != "gpt-saved" {
		t.Errorf("tracked fields not restored: lastUsedProvider=%v model=%v", p["lastUsedProvider"], dig(p, "providers", "openai-native", "settings", "model"))
	}
	if got := len(e.records()); got != n {
		t.Errorf("got %d runs, want %d", got, n)
	}
}
