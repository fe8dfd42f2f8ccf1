//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/service"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// httpServer is a built cline-mcp serving streamable HTTP, with its stderr kept.
type httpServer struct {
	url    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
}

var serviceURL = regexp.MustCompile(`url=(http://127\.0\.0\.1:[0-9]+/mcp)`)

// startHTTPServer starts `cline-mcp serve --http 127.0.0.1:0` over e's directories and waits for
// the address it listens on (from its log).
func startHTTPServer(t *testing.T, e *env, args ...string) *httpServer {
	t.Helper()
	argv, environ := e.server(nil, args...)
	cmd := exec.Command(bins.ClineMCP, append([]string{"serve", "--http", "127.0.0.1:0"}, argv...)...)
	cmd.Env, cmd.Dir = environ, e.work
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &httpServer{cmd: cmd}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := serviceURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // the test waited for it
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Errorf("the service did not stop within 2 min of SIGTERM")
		}
		if t.Failed() {
			s.mu.Lock()
			t.Logf("service stderr:\n%s", s.stderr.String())
			s.mu.Unlock()
		}
	})
	select {
	case s.url = <-found:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the service logged no address in 2 min")
	}
	return s
}

func (s *httpServer) client(t *testing.T, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(s.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "e2e", Version: "1"}}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func structuredOf(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var sc map[string]any
	_ = json.Unmarshal(b, &sc)
	return sc
}

// TestHTTPServiceDocker drives the built server in service mode, Docker isolation and the fake
// image, through mcp-go's streamable HTTP client: no token, no service; a tenant's ask_cline runs
// in a container; a tenant whose one slot is taken and whose queue is empty is refused at once
// while its run goes on; SIGTERM stops the service with nothing left running.
func TestHTTPServiceDocker(t *testing.T) {
	if dockerErr != nil {
		t.Skipf("!!! SKIPPED: no Docker engine: %v", dockerErr)
	}
	e := prepareEnv(t)
	tokens := filepath.Join(e.root, "tokens.json")
	const token = "e2e-tenant-token"
	file := `{"tenants": [{"name": "ci", "tokenSha256": ["` + service.Hash(token) + `"], "root": "` + e.work + `",
		"maxConcurrent": 1, "maxQueued": 0, "maxJobs": 1, "maxSpendUsdPerDay": 5}]}`
	if err := os.WriteFile(tokens, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startHTTPServer(t, e, "--http-tokens", tokens, "--isolation", "docker",
		"--docker-image", mcpsession.FakeImage, "--docker-network", "none")

	resp, err := http.Post(s.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: got %d, want 401", resp.StatusCode)
	}

	c := s.client(t, token)
	start := time.Now()
	res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline",
		Arguments: map[string]any{"prompt": "Reply with PONG", "cwd": e.work}}})
	runTook := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	sc := structuredOf(t, res)
	wantDockerOK(t, sc)
	if sc["text"] != "PONG" {
		t.Errorf("got text %v, want PONG", sc["text"])
	}

	c2 := s.client(t, token)
	wantRefusedWhileRunning(t, e, c, c2, runTook)

	// Outside the tenant's root: refused before any container starts.
	res, err = c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline",
		Arguments: map[string]any{"prompt": "Reply with PONG", "cwd": e.home}}})
	if err != nil || structuredOf(t, res)["kind"] != "launch_failed" || !strings.Contains(mcpsession.Text(res), "outside") {
		t.Errorf("cwd outside the tenant's root: got %v %v, want launch_failed naming it outside", err, mcpsession.Text(res))
	}
	hung := onProgress(c, "hang-1")
	wantDisconnectFreesSlot(t, e, c, c2, hung, s.cmd.Process.Pid)
	wantStopOnSIGTERM(t, e, c, hung, s)
}

// onProgress signals (without blocking) each progress notification for token.
func onProgress(c *client.Client, token string) chan struct{} {
	ch := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) && n.Params.AdditionalFields["progressToken"] == token {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	return ch
}

// wantRefusedWhileRunning: with one slot and no queue, a slow run holds the slot (its first
// progress shows it runs), and the next call is refused at once while it goes on.
func wantRefusedWhileRunning(t *testing.T, e *env, c, c2 *client.Client, runTook time.Duration) {
	t.Helper()
	progressed := onProgress(c, "slow-1")
	slow := make(chan map[string]any, 1)
	go func() {
		r, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline",
			Arguments: map[string]any{"prompt": "Take your time fake:slow?seconds=6&interval_ms=500", "cwd": e.work},
			Meta:      &mcp.Meta{ProgressToken: "slow-1"}}})
		if err != nil {
			slow <- map[string]any{"error": err.Error()}
			return
		}
		slow <- structuredOf(t, r)
	}()
	select {
	case <-progressed:
	case <-time.After(2 * time.Minute):
		t.Fatal("the slow run sent no progress")
	}
	start := time.Now()
	res, err := c2.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline",
		Arguments: map[string]any{"prompt": "Reply with PONG", "cwd": e.work}}})
	refusalTook := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-slow:
		t.Fatalf("the slow run ended (%v) before the refusal could be checked against it", r)
	default:
	}
	sc := structuredOf(t, res)
	if sc["kind"] != "rate_limited" || sc["retryable"] != true || sc["retryAfterSeconds"] == nil {
		t.Errorf("second call with the slot taken: got %v, want rate_limited, retryable, retryAfterSeconds", sc)
	}
	t.Logf("a Docker run took %v, the refusal %v (ratio %.4f)", runTook, refusalTook, refusalTook.Seconds()/runTook.Seconds())
	r := <-slow
	if r["ok"] != true {
		t.Errorf("the slow run: got %v, want ok", r)
	}
}

// wantDisconnectFreesSlot: a client that goes away cancels its call: a run that would hang for
// its whole timeout is stopped and frees the tenant's one slot for the next call.
func wantDisconnectFreesSlot(t *testing.T, e *env, c, c2 *client.Client, hung chan struct{}, pid int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	gone := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline",
			Arguments: map[string]any{"prompt": "Wait fake:hang?after_events=true", "cwd": e.work, "timeoutSeconds": 300},
			Meta:      &mcp.Meta{ProgressToken: "hang-1"}}})
		gone <- err
	}()
	select {
	case <-hung:
	case <-time.After(2 * time.Minute):
		t.Fatal("the hanging run sent no progress")
	}
	if ids, _ := mcpsession.ContainersOf(pid); len(ids) == 0 {
		t.Fatal("no container runs the hanging call: the disconnect below would prove nothing")
	}
	cancel()
	<-gone
	refused := 0
	for {
		res, err := c2.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline",
			Arguments: map[string]any{"prompt": "Reply with PONG", "cwd": e.work}}})
		if err != nil {
			t.Fatal(err)
		}
		sc := structuredOf(t, res)
		if sc["ok"] == true {
			break
		}
		if sc["kind"] != "rate_limited" || refused > 240 {
			t.Fatalf("after the disconnect: got %v (%d refusals before), want the slot freed", sc, refused)
		}
		refused++
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("the slot was free after the disconnect; %d call(s) refused meanwhile", refused)
}

// wantStopOnSIGTERM: SIGTERM during a run: the service stops it, cleans up and exits.
func wantStopOnSIGTERM(t *testing.T, e *env, c *client.Client, hung chan struct{}, s *httpServer) {
	t.Helper()
	select { // a signal left from the earlier run
	case <-hung:
	default:
	}
	go func() {
		_, _ = c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "ask_cline",
			Arguments: map[string]any{"prompt": "Wait fake:hang?after_events=true", "cwd": e.work, "timeoutSeconds": 300},
			Meta:      &mcp.Meta{ProgressToken: "hang-1"}}})
	}()
	select {
	case <-hung:
	case <-time.After(2 * time.Minute):
		t.Fatal("the second hanging run sent no progress")
	}
	if ids, _ := mcpsession.ContainersOf(s.cmd.Process.Pid); len(ids) == 0 {
		t.Fatal("no container runs the call: stopping the service would prove nothing")
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("the service after SIGTERM: %v, want exit 0", err)
	}
	if ids, err := mcpsession.ContainersOf(s.cmd.Process.Pid); err != nil || len(ids) > 0 {
		t.Errorf("containers left after the service stopped: %v %v", ids, err)
	}
}
