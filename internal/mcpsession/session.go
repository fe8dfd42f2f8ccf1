// Package mcpsession drives the built cline-mcp binary over stdio with mcp-go's client, the way
// a real MCP client does, for integration and e2e tests. It records every line the server writes
// to stdout so tests can prove the wire carries nothing but JSON-RPC.
package mcpsession

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Binaries are the built executables a session needs.
type Binaries struct {
	Dir       string
	ClineMCP  string
	FakeCline string
	// ImageFake is the fake CLI built for the images: GOOS=linux and the Docker engine's
	// architecture (the same file as FakeCline on a Linux host of that architecture).
	ImageFake string
}

var (
	buildMu  sync.Mutex
	built    Binaries
	buildErr error
)

// Build compiles cline-mcp and fake-cline once per test process into dir (use a directory that
// outlives individual tests, e.g. one made in TestMain). When the binaries of an earlier Build
// are gone (it was given a test's own TempDir), it builds them again into dir.
func Build(dir string) (Binaries, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if built.ClineMCP != "" || buildErr != nil {
		if buildErr != nil {
			return built, buildErr
		}
		if _, err := os.Stat(built.ImageFake); err == nil {
			return built, nil
		}
	}
	func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		built = Binaries{Dir: dir, ClineMCP: filepath.Join(dir, "cline-mcp"), FakeCline: filepath.Join(dir, "fake-cline")}
		for out, pkg := range map[string]string{built.ClineMCP: "./cmd/cline-mcp", built.FakeCline: "./internal/cmd/fake-cline"} {
			if buildErr = goBuild(root, out, pkg); buildErr != nil {
				return
			}
		}
		built.ImageFake = built.FakeCline
		if arch := EngineArch(); runtime.GOOS != "linux" || arch != runtime.GOARCH {
			built.ImageFake = filepath.Join(dir, "fake-cline-linux-"+arch)
			buildErr = goBuild(root, built.ImageFake, "./internal/cmd/fake-cline", "GOOS=linux", "GOARCH="+arch)
		}
	}()
	return built, buildErr
}

// goBuild compiles pkg statically into out, with env added to the environment.
func goBuild(root, out, pkg string, env ...string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// EngineArch is the Docker engine's architecture (GOARCH spelling), or the host's when no engine
// answers. Images get binaries of this architecture, whatever the host runs.
func EngineArch() string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Arch}}").Output()
	if arch := strings.TrimSpace(string(out)); err == nil && arch != "" {
		return arch
	}
	return runtime.GOARCH
}

func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate the module root")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")), nil
}

// Options configure one server process.
type Options struct {
	Args []string // extra flags for cline-mcp
	Env  []string // the complete environment of the server (nil: a minimal one built by Start)
	Dir  string   // the server's working directory
	// ClientOptions configure the MCP client (an elicitation handler, say); ProtocolVersion is the
	// one it asks for in initialize ("": the latest).
	ClientOptions   []client.ClientOption
	ProtocolVersion string
}

// Session is one running cline-mcp process with an initialized MCP client.
type Session struct {
	t      testing.TB
	Cmd    *exec.Cmd
	Client *client.Client
	stdin  io.WriteCloser

	mu            sync.Mutex
	lines         []string
	badLines      []string
	stderr        bytes.Buffer
	notifications []mcp.JSONRPCNotification
	exited        chan struct{}
}

// Start launches the server and initializes an MCP session. The server is stopped (stdin
// closed, then killed after a grace) when the test ends.
func Start(t testing.TB, bin string, o Options) *Session {
	t.Helper()
	cmd := exec.Command(bin, o.Args...)
	cmd.Env = o.Env
	cmd.Dir = o.Dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{t: t, Cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	cmd.Stderr = lockedWriter{&s.mu, &s.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rememberServer(cmd.Process.Pid)
	pr, pw := io.Pipe()
	go s.record(stdout, pw)
	go func() { _ = cmd.Wait(); close(s.exited) }()

	tr := transport.NewIO(pr, stdin, io.NopCloser(strings.NewReader("")))
	c := client.NewClient(tr, o.ClientOptions...)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		s.mu.Lock()
		s.notifications = append(s.notifications, n)
		s.mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The transport keeps Start's context for the requests the server sends (elicitation): one
	// that ends with this function would answer every such request "context canceled".
	if err := c.Start(context.WithoutCancel(ctx)); err != nil {
		t.Fatalf("client start: %v", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if o.ProtocolVersion != "" {
		init.Params.ProtocolVersion = o.ProtocolVersion
	}
	init.Params.ClientInfo = mcp.Implementation{Name: "cline-mcp-tests", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v\nstderr:\n%s", err, s.Stderr())
	}
	s.Client = c
	t.Cleanup(func() { s.Stop() })
	return s
}

// record copies the server's stdout to the client while checking every line is JSON-RPC.
func (s *Session) record(stdout io.Reader, to *io.PipeWriter) {
	r := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := r.ReadString('\n')
		if len(line) > 0 {
			s.mu.Lock()
			s.lines = append(s.lines, line)
			if !isJSONRPC(line) {
				s.badLines = append(s.badLines, line)
			}
			s.mu.Unlock()
			if _, werr := io.WriteString(to, line); werr != nil {
				_, _ = io.Copy(io.Discard, r)
				return
			}
		}
		if err != nil {
			to.CloseWithError(err)
			return
		}
	}
}

func isJSONRPC(line string) bool {
	if !strings.HasSuffix(line, "\n") {
		return false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return false
	}
	var v string
	return json.Unmarshal(m["jsonrpc"], &v) == nil && v == "2.0"
}

// Call invokes a tool and returns the result; a protocol error fails the test.
func (s *Session) Call(ctx context.Context, tool string, args map[string]any) *mcp.CallToolResult {
	s.t.Helper()
	res, err := s.CallErr(ctx, tool, args, nil)
	if err != nil {
		s.t.Fatalf("call %s: %v\nstderr:\n%s", tool, err, s.Stderr())
	}
	return res
}

// CallErr invokes a tool with an optional progress token.
func (s *Session) CallErr(ctx context.Context, tool string, args map[string]any, progressToken any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	if progressToken != nil {
		req.Params.Meta = &mcp.Meta{ProgressToken: progressToken}
	}
	return s.Client.CallTool(ctx, req)
}

// Structured returns a result's structuredContent as a map.
func Structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		t.Fatalf("structuredContent is not an object: %s", b)
	}
	return m
}

// Text returns the first text content of a result.
func Text(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// Notifications returns the notifications received so far with the given method.
func (s *Session) Notifications(method string) []mcp.JSONRPCNotification {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, n := range s.notifications {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// Lines returns every stdout line so far, and those that were not JSON-RPC.
func (s *Session) Lines() (all, bad []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...), append([]string(nil), s.badLines...)
}

// Stderr returns the server's log output so far.
func (s *Session) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// Stop closes stdin (the MCP way to end a stdio session), waits for a clean exit, and kills
// the server if it does not exit within the grace. It reports whether the exit was clean.
func (s *Session) Stop() bool {
	_ = s.stdin.Close()
	select {
	case <-s.exited:
		return s.Cmd.ProcessState != nil && s.Cmd.ProcessState.Success()
	case <-time.After(40 * time.Second):
		_ = s.Cmd.Process.Kill()
		<-s.exited
		return false
	}
}

// Exited is closed when the server process has exited.
func (s *Session) Exited() <-chan struct{} { return s.exited }

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
