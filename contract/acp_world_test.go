//go:build contract && linux

package contract

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
)

// acpKey is the key the ACP tests put into CLINE_API_KEY; providers.json keeps sk-test-123, so a
// request carrying acpKey proves the env key is what is sent (docs/acp.md §1).
const acpKey = "sk-acp-env-key"

// acpWorld is one ACP test's setup: a fake provider, a HOME whose providers.json points at it,
// and a git work tree. Processes start with agent(); each is killed (process group) at cleanup.
type acpWorld struct {
	t     *testing.T
	root  string
	home  string
	work  string
	prov  *fakeprovider.Provider
	tag   string
	extra map[string]string // added to every agent's environment
}

func newACPWorld(t *testing.T, respond fakeprovider.Responder) *acpWorld {
	t.Helper()
	needSuite(t)
	root := t.TempDir()
	w := &acpWorld{t: t, root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work"), tag: randomHex()}
	providers := filepath.Join(w.home, ".cline", "data", "settings", "providers.json")
	for _, d := range []string{w.work, filepath.Dir(providers), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	prov, err := fakeprovider.Start(respond)
	if err != nil {
		t.Fatal(err)
	}
	w.prov = prov
	t.Cleanup(func() { _ = prov.Close() })
	(&world{t: t}).writeJSON(providers, providersJSON(prov.BaseURL()))
	gitInit(t, w.work, map[string]string{"README.md": "hello\n"})
	t.Cleanup(func() {
		if left := eventuallyNone(10*time.Second, func() []int { return tagged(w.tag, -1) }); len(left) > 0 {
			t.Errorf("processes of this test outlived it: %v", describe(left))
		}
	})
	return w
}

// agentProc is one running `cline --acp` with its engine.
type agentProc struct {
	cmd     *exec.Cmd
	conn    *acp.Conn
	started time.Time
	wire    *transcript
	stderr  *bytes.Buffer
	exited  chan struct{}
}

// env is the agent's environment: the world's HOME and the engine's Env with the provider.
func (w *acpWorld) env(key string) []string {
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "TMPDIR=" + filepath.Join(w.root, "tmp"), "CONTRACT_RUN_TAG=" + w.tag}
	return acp.Env(base, acp.Child{Provider: "openai-compatible", APIKey: key}, w.extra)
}

// agent starts the real CLI in ACP mode and wraps its stdio in a Conn (not yet initialized).
func (w *acpWorld) agent(key string, opts acp.Options) *agentProc {
	w.t.Helper()
	cmd := exec.Command(suite.cli, acp.Args()...)
	cmd.Env = w.env(key)
	cmd.Dir = w.work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	p := &agentProc{cmd: cmd, wire: &transcript{}, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = &lockedWriter{w: p.stderr}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	w.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		if os.Getenv("CLINE_MCP_CONTRACT_WIRE") != "" {
			w.t.Logf("agent wire:\n%s", p.wire.String())
		}
		if w.t.Failed() {
			w.t.Logf("agent stderr:\n%s", tail(p.stderr.String(), 4000))
			w.t.Logf("agent wire:\n%s", tail(p.wire.String(), 12000))
		}
	})
	p.conn = acp.New(p.wire.writer(">", stdin), io.TeeReader(stdout, p.wire.writer("<", io.Discard)), opts)
	return p
}

// initialized starts an agent and initializes it.
func (w *acpWorld) initialized(opts acp.Options) *agentProc {
	w.t.Helper()
	p := w.agent(acpKey, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := p.conn.Initialize(ctx)
	if err != nil {
		w.t.Fatalf("initialize: %v", err)
	}
	if info.Name != "cline" || info.Version != clineVersion || !info.LoadSession || info.ProtocolVersion != 1 {
		w.t.Errorf("got agent %+v, want cline %s, protocol 1, loadSession", info, clineVersion)
	}
	return p
}

// session opens a new session in the work tree and sets the model.
func (w *acpWorld) session(p *agentProc, policy acp.Policy) *acp.Session {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := p.conn.NewSession(ctx, w.work, policy)
	if err != nil {
		w.t.Fatalf("session/new: %v", err)
	}
	if err := s.SetModel(ctx, "fake-model"); err != nil {
		w.t.Fatalf("set model: %v", err)
	}
	return s
}

// prompt runs one turn with a generous deadline.
func (w *acpWorld) prompt(s *acp.Session, text string) (acp.Turn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return s.Prompt(ctx, text, nil)
}

// stop closes the agent's stdin and waits for it to exit.
func (p *agentProc) stop(t *testing.T) {
	t.Helper()
	if err := p.conn.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("cline --acp did not exit within 10 s of stdin closing")
	}
}

// transcript keeps both directions of the wire, one line per message, for logs and fact checks.
type transcript struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (tr *transcript) writer(dir string, next io.Writer) io.WriteCloser {
	return &tapWriter{tr: tr, dir: dir, next: next}
}

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.buf.String()
}

// lines returns the recorded lines of one direction ("<" from the agent, ">" to it).
func (tr *transcript) lines(dir string) []string {
	var out []string
	for _, l := range strings.Split(tr.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, dir+" "); ok {
			out = append(out, rest)
		}
	}
	return out
}

type tapWriter struct {
	tr   *transcript
	dir  string
	next io.Writer
	part []byte
}

func (t *tapWriter) Write(b []byte) (int, error) {
	t.tr.mu.Lock()
	t.part = append(t.part, b...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.tr.buf.WriteString(t.dir + " " + string(t.part[:i]) + "\n")
		t.part = t.part[i+1:]
	}
	t.tr.mu.Unlock()
	return t.next.Write(b)
}

func (t *tapWriter) Close() error {
	if c, ok := t.next.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
