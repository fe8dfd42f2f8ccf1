package acp_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
)

// fakeBin is internal/cmd/fake-cline, built once for the tests that run it as a child process.
var fakeBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() { // unit tests only: the in-memory agent, no child processes
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "acp-fake-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "fake-cline")
	build := exec.Command("go", "build", "-o", fakeBin, "../../internal/cmd/fake-cline")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build fake-cline: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// fakeWorld is a HOME and a work tree for fake-cline --acp processes.
type fakeWorld struct {
	t     *testing.T
	home  string
	work  string
	extra map[string]string
	key   string
}

func newFakeWorld(t *testing.T) *fakeWorld {
	t.Helper()
	if testing.Short() {
		t.Skip("starts fake-cline processes (not with -short)")
	}
	root := t.TempDir()
	w := &fakeWorld{t: t, home: filepath.Join(root, "home"), work: filepath.Join(root, "work"), key: "sk-fake", extra: map[string]string{"FAKE_CLINE_ACP_EOF_MS": "10"}}
	for _, d := range []string{w.home, w.work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.work, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *fakeWorld) dataDir() string { return filepath.Join(w.home, ".cline", "data") }

// child is one fake-cline --acp process with its Conn.
type child struct {
	cmd    *exec.Cmd
	conn   *acp.Conn
	exited chan struct{}
}

// start runs fake-cline --acp with the engine's Args and Env and wraps its pipes.
func (w *fakeWorld) start(opts acp.Options) *child {
	w.t.Helper()
	cmd := exec.Command(fakeBin, acp.Args()...)
	cmd.Env = acp.Env([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home}, acp.Child{Provider: "openai-compatible", APIKey: w.key}, w.extra)
	cmd.Dir = w.work
	stdin, err := cmd.StdinPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.exited) }()
	w.t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.exited })
	c.conn = acp.New(stdin, stdout, opts)
	return c
}

// ready starts and initializes a child.
func (w *fakeWorld) ready() *child {
	w.t.Helper()
	c := w.start(acp.Options{CancelGrace: 2 * time.Second, CloseGrace: 2 * time.Second})
	info, err := c.conn.Initialize(w.t.Context())
	if err != nil {
		w.t.Fatalf("initialize: %v", err)
	}
	if info.Name != "cline" || info.Version != "3.0.65" || !info.LoadSession || info.ProtocolVersion != 1 {
		w.t.Errorf("got %+v, want cline 3.0.65, protocol 1, loadSession", info)
	}
	return c
}

func (w *fakeWorld) session(c *child, p acp.Policy) *acp.Session {
	w.t.Helper()
	s, err := c.conn.NewSession(w.t.Context(), w.work, p)
	if err != nil {
		w.t.Fatalf("session/new: %v", err)
	}
	if err := s.SetModel(w.t.Context(), "fake-model"); err != nil {
		w.t.Fatalf("set model: %v", err)
	}
	return s
}

// stop closes stdin and waits for the child to exit.
func (c *child) stop(t *testing.T) {
	t.Helper()
	if err := c.conn.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("fake-cline --acp did not exit after stdin closed")
	}
}

func prompt(t *testing.T, s *acp.Session, text string) (acp.Turn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return s.Prompt(ctx, text, nil)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
