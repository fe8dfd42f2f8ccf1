package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
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
