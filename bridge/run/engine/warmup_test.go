package engine

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/host"
)

// settles is a Settler that records each settle (with or without a credential) and whether the
// agent had prompted by then, and answers with the next of its reports.
type settles struct {
	mu      sync.Mutex
	calls   []string
	reports []*sandbox.EgressReport
	data    string // the agent's data dir: a session's files there mean it prompted
}

func (s *settles) Settle(_ context.Context, cred *sandbox.Credential) (*sandbox.EgressReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := "none"
	if cred != nil {
		c = "credential"
	}
	prompted, _ := filepath.Glob(filepath.Join(s.data, "sessions", "*", "*.messages.json"))
	if len(prompted) > 0 {
		c += " after the prompt"
	}
	s.calls = append(s.calls, c)
	var r *sandbox.EgressReport
	if len(s.reports) > 0 {
		r, s.reports = s.reports[0], s.reports[1:]
	}
	return r, nil
}

// TestMain removes the fake CLI the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if fakeBuild.bin != "" {
		_ = os.RemoveAll(filepath.Dir(fakeBuild.bin))
	}
	os.Exit(code)
}

var fakeBuild struct {
	once sync.Once
	bin  string
	err  error
	out  []byte
}

// fakeCLI is internal/cmd/fake-cline, built once for this package's tests.
func fakeCLI(t *testing.T) string {
	fakeBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "engine-fake-")
		if fakeBuild.err = err; err != nil {
			return
		}
		fakeBuild.bin = filepath.Join(dir, "fake-cline")
		build := exec.Command("go", "build", "-o", fakeBuild.bin, "../../../internal/cmd/fake-cline")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		fakeBuild.out, fakeBuild.err = build.CombinedOutput()
	})
	if fakeBuild.err != nil {
		t.Fatalf("go build fake-cline: %v\n%s", fakeBuild.err, fakeBuild.out)
	}
	return fakeBuild.bin
}

// fakeAgent starts fake-cline --acp on the host, its grant settled by s, initialized; every
// prompt of it fails as a provider's 401 would (the proxy's refusal of a warm-up).
func fakeAgent(t *testing.T, s *settles) *agent {
	t.Helper()
	if testing.Short() {
		t.Skip("starts fake-cline (not with -short)")
	}
	root := t.TempDir()
	bin := fakeCLI(t)
	s.data = filepath.Join(root, "data")
	for _, d := range []string{s.data, filepath.Join(root, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := acp.Env([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home")},
		acp.Child{Provider: "openai-compatible", APIKey: "sk-placeholder"},
		map[string]string{"CLINE_DATA_DIR": s.data, "FAKE_CLINE_SCENARIO": "http_401", "FAKE_CLINE_ACP_EOF_MS": "10"})
	run := execFunc(func(ctx context.Context, spec sandbox.Spec) (sandbox.Exit, error) {
		spec.Live(s)
		return host.New().Run(ctx, spec)
	})
	ag := startAgent(run, sandbox.Spec{Path: bin, Args: acp.Args(), Env: env, Dir: root}, nil)
	t.Cleanup(func() { ag.end(time.Now()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := ag.conn.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	return ag
}

// TestWarmUpRefusedTurnBetweenSettles: a spare's warm-up disarms its grant before its prompt
// (nothing lent while it sends its one request), prompts once — the refusal ends the turn — and
// settles again after it; the process lives on for its claim.
func TestWarmUpRefusedTurnBetweenSettles(t *testing.T) {
	s := &settles{}
	ag := fakeAgent(t, s)
	if err := (warmUp{dir: filepath.Dir(s.data), model: "fake-model"}).run(context.Background(), ag); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
	if want := []string{"none", "none after the prompt"}; len(s.calls) != 2 || s.calls[0] != want[0] || s.calls[1] != want[1] {
		t.Errorf("settles %q, want %q", s.calls, want)
	}
	if !ag.alive() {
		t.Error("the warmed-up process ended")
	}
}

// TestWarmUpThatGotAnswersIsRefused: a warm-up whose settle says the proxy lent the key (an
// answer, spend, an endpoint reached) fails, and the spare is not kept.
func TestWarmUpThatGotAnswersIsRefused(t *testing.T) {
	for name, rep := range map[string]*sandbox.EgressReport{
		"answer":  {Answers: 1},
		"spend":   {SpentUSD: 0.01},
		"reached": {Allowed: []sandbox.Reached{{Target: "example.com:443", Count: 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			s := &settles{reports: []*sandbox.EgressReport{nil, rep}}
			ag := fakeAgent(t, s)
			if err := (warmUp{dir: filepath.Dir(s.data)}).run(context.Background(), ag); err == nil {
				t.Fatal("a warm-up that was answered passed")
			}
		})
	}
}

// blindWorld is a spare whose key is inside: fake-cline --acp on the host calling its provider
// (call_provider) with the baseUrl of its data dir's providers.json, a provider that counts what
// reaches it, and a Blind that rewrites that file the way bridge/run's does (Sync is given a
// Syncer when copying: the engine's sign of an executor that copies mounts).
type blindWorld struct {
	ag        *agent
	data      string
	providers string
	real      []byte
	reached   atomic.Int32
	blinds    []bool
	ended     bool // the test ended the process (an agent is ended once)
}

func newBlindWorld(t *testing.T, copying bool) *blindWorld {
	t.Helper()
	if testing.Short() {
		t.Skip("starts fake-cline (not with -short)")
	}
	w := &blindWorld{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		w.reached.Add(1)
		_, _ = rw.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	root := t.TempDir()
	w.data = filepath.Join(root, "data")
	w.providers = filepath.Join(w.data, "settings", "providers.json")
	for _, d := range []string{filepath.Dir(w.providers), filepath.Join(root, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.real = []byte(`{"providers":{"openai-compatible":{"settings":{"apiKey":"sk-inside","baseUrl":"` + srv.URL + `/v1"}}}}`)
	if err := os.WriteFile(w.providers, w.real, 0o600); err != nil {
		t.Fatal(err)
	}
	env := acp.Env([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home")},
		acp.Child{Provider: "openai-compatible", APIKey: "sk-inside"},
		map[string]string{"CLINE_DATA_DIR": w.data, "FAKE_CLINE_SCENARIO": "call_provider", "FAKE_CLINE_ACP_EOF_MS": "10"})
	run := execFunc(func(ctx context.Context, spec sandbox.Spec) (sandbox.Exit, error) {
		if copying {
			spec.Sync(nopSyncer{})
		}
		return host.New().Run(ctx, spec)
	})
	w.ag = startAgent(run, sandbox.Spec{Path: fakeCLI(t), Args: acp.Args(), Env: env, Dir: root}, nil)
	t.Cleanup(func() {
		if !w.ended {
			w.ag.end(time.Now())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.ag.conn.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *blindWorld) blind(on bool) error {
	w.blinds = append(w.blinds, on)
	data := w.real
	if on {
		data = []byte(`{"providers":{"openai-compatible":{"settings":{"apiKey":"sk-inside","baseUrl":"http://127.0.0.1:0/v1"}}}}`)
	}
	return os.WriteFile(w.providers, data, 0o600)
}

type nopSyncer struct{}

func (nopSyncer) Sync(context.Context) error { return nil }

// TestWarmUpBlindKeyInside: a spare whose key is inside goes through its request path with its
// settings pointed where nothing listens — the warm-up's session is there (the marker that it
// prompted) and its provider call was refused, the provider saw nothing — and its settings are
// the host's again afterwards: the next session's call reaches the provider.
func TestWarmUpBlindKeyInside(t *testing.T) {
	w := newBlindWorld(t, false)
	s := &spare{ag: w.ag, blind: w.blind}
	if got := (warmUp{dir: filepath.Dir(w.data), model: "fake-model"}).spare(context.Background(), s, false, &ACP{log: slog.Default()}); got != s || !s.warmed {
		t.Fatalf("the spare was not kept warmed (kept %v, warmed %v)", got != nil, s.warmed)
	}
	if len(w.blinds) != 2 || !w.blinds[0] || w.blinds[1] {
		t.Errorf("blind calls %v, want [true false]", w.blinds)
	}
	msgs, _ := filepath.Glob(filepath.Join(w.data, "sessions", "*", "*.messages.json"))
	if len(msgs) != 1 {
		t.Fatalf("warm-up sessions %v, want the one that prompted", msgs)
	}
	if b, _ := os.ReadFile(msgs[0]); !strings.Contains(string(b), "refused") {
		t.Errorf("the warm-up's provider call was not refused: %s", b)
	}
	if n := w.reached.Load(); n != 0 {
		t.Fatalf("the warm-up reached the provider %d times", n)
	}
	if b, _ := os.ReadFile(w.providers); string(b) != string(w.real) {
		t.Errorf("settings after the warm-up %s, want the host's %s", b, w.real)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := w.ag.conn.NewSession(ctx, filepath.Dir(w.data), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Prompt(ctx, "the call", nil); err != nil {
		t.Fatal(err)
	}
	if n := w.reached.Load(); n != 1 {
		t.Errorf("the claiming session's call reached the provider %d times, want 1", n)
	}
}

// TestWarmUpBlindNotOnCopies: a spare in a copying executor's container (a Syncer was given) is
// not warmed blind — the host's writes would not reach it — and its settings are never touched.
func TestWarmUpBlindNotOnCopies(t *testing.T) {
	w := newBlindWorld(t, true)
	s := &spare{ag: w.ag, blind: w.blind}
	if got := (warmUp{dir: filepath.Dir(w.data)}).spare(context.Background(), s, false, &ACP{log: slog.Default()}); got != s || s.warmed || len(w.blinds) != 0 {
		t.Errorf("kept %v, warmed %v, blind calls %v; want kept, not warmed, no calls", got != nil, s.warmed, w.blinds)
	}
}

// TestWarmUpBlindFailure: a spare whose settings could not be pointed away is not kept, and its
// settings are put back.
func TestWarmUpBlindFailure(t *testing.T) {
	w := newBlindWorld(t, false)
	fail := func(on bool) error {
		w.blinds = append(w.blinds, on)
		if on {
			return errors.New("refused")
		}
		return nil
	}
	s := &spare{ag: w.ag, blind: fail, data: Owned{}}
	got := (warmUp{dir: filepath.Dir(w.data)}).spare(context.Background(), s, false, &ACP{log: slog.Default()})
	w.ended = got == nil
	if got != nil {
		t.Error("a spare whose warm-up failed was kept")
	} else if w.ag.alive() {
		t.Error("the process of a spare whose warm-up failed lives on")
	}
	if len(w.blinds) != 2 || w.blinds[1] {
		t.Errorf("blind calls %v, want [true false]", w.blinds)
	}
	if w.reached.Load() != 0 {
		t.Error("the provider was reached")
	}
}

// TestSessionOpenedAhead: a spare's session opened before its claim goes to the claim's first
// turn only when it fits — a new conversation with the model it was opened with — and never
// twice; a turn it does not fit opens its own.
func TestSessionOpenedAhead(t *testing.T) {
	ag := fakeAgent(t, &settles{})
	e := &ACP{log: slog.Default()}
	w := warmUp{dir: t.TempDir(), model: "fake-model"}
	open := func() string {
		t.Helper()
		if s := w.openAhead(context.Background(), &spare{ag: ag}, e); s == nil || ag.ahead == nil || ag.aheadModel != "fake-model" {
			t.Fatal("no session was opened ahead")
		}
		return ag.ahead.ID()
	}
	open()
	if _, ok := ag.takeAhead(Turn{}, "another-model"); ok || ag.ahead != nil {
		t.Error("a turn with another model took the session opened ahead, or it was kept")
	}
	open()
	if _, ok := ag.takeAhead(Turn{SessionID: "1700000000000_x_cli"}, "fake-model"); ok {
		t.Error("a later turn of another session took the session opened ahead")
	}
	id := open()
	sess, ok := ag.takeAhead(Turn{Policy: acp.ReadOnly(false)}, "fake-model")
	if !ok || sess.ID() != id {
		t.Fatalf("a fitting turn did not get the session opened ahead (%v)", ok)
	}
	if _, again := ag.takeAhead(Turn{}, "fake-model"); again {
		t.Error("the session opened ahead was given twice")
	}
}
