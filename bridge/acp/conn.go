package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// ProtocolVersion is the ACP version the engine speaks; Cline 3.0.65 answers 1 (docs/acp.md §2).
const ProtocolVersion = 1

// Defaults of Options' graces.
const (
	// DefaultCancelGrace is how long a turn waits for the stopReason after session/cancel. The
	// real CLI answers in about 80 ms (docs/acp.md §6); the rest is headroom for a loaded machine.
	DefaultCancelGrace = 5 * time.Second
	// DefaultCloseGrace is how long Close waits for the agent to end the stream after stdin
	// closed (the CLI exits about 1 s after EOF, docs/acp.md §1).
	DefaultCloseGrace = 3 * time.Second
)

// Options configure a Conn. The zero value is usable.
type Options struct {
	// ClientName and ClientVersion are sent as clientInfo (default "cline-mcp", "dev").
	ClientName, ClientVersion string
	// CancelGrace and CloseGrace: zero means the defaults.
	CancelGrace, CloseGrace time.Duration
	// Logger receives the SDK's diagnostics (unparsable lines, dropped messages). nil discards:
	// a library never writes to the server's stdout or stderr on its own.
	Logger *slog.Logger
}

// AgentInfo is what initialize told about the agent.
type AgentInfo struct {
	Name, Version   string
	ProtocolVersion int
	LoadSession     bool // session/load is advertised
}

// Conn is the client side of one ACP connection (one agent process). Its methods are safe for
// concurrent use; turns of different sessions may run at once, one turn per session.
type Conn struct {
	opts  Options
	stdin io.Writer
	sdk   *sdk.ClientSideConnection
	gate  *gate

	mu       sync.Mutex
	sessions map[string]*Session
	agent    AgentInfo
	ready    bool

	closeOnce sync.Once
	closeErr  error
}

// New starts reading the agent's stdout. stdin is the agent's stdin: Close closes it when it is an
// io.Closer. New sends nothing; call Initialize first. The caller owns the process and kills it
// when Close did not end it.
func New(stdin io.Writer, stdout io.Reader, opts Options) *Conn {
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = DefaultCancelGrace
	}
	if opts.CloseGrace <= 0 {
		opts.CloseGrace = DefaultCloseGrace
	}
	if opts.ClientName == "" {
		opts.ClientName = "cline-mcp"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "dev"
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Conn{opts: opts, stdin: stdin, sessions: map[string]*Session{}, gate: newGate(stdout)}
	c.sdk = sdk.NewClientSideConnection(&handler{c: c}, stdin, c.gate)
	c.sdk.SetLogger(logger)
	go func() { <-c.sdk.Done(); c.gate.shut() }()
	return c
}

// Done is closed when the agent's stdout ended (the process exited or closed it).
func (c *Conn) Done() <-chan struct{} { return c.sdk.Done() }

// Initialize performs the handshake. It fails with a *ProtocolError when the agent speaks
// another protocol version. The client advertises no fs or terminal capability: the CLI never
// uses them (docs/acp.md §5) and the engine would refuse them.
func (c *Conn) Initialize(ctx context.Context) (AgentInfo, error) {
	resp, err := call(ctx, func(ctx context.Context) (sdk.InitializeResponse, error) {
		return c.sdk.Initialize(ctx, sdk.InitializeRequest{
			ProtocolVersion: ProtocolVersion,
			ClientInfo:      &sdk.Implementation{Name: c.opts.ClientName, Version: c.opts.ClientVersion},
		})
	})
	if err != nil {
		return AgentInfo{}, c.wrap("initialize", err)
	}
	info := AgentInfo{ProtocolVersion: int(resp.ProtocolVersion), LoadSession: resp.AgentCapabilities.LoadSession}
	if resp.AgentInfo != nil {
		info.Name, info.Version = capTo(resp.AgentInfo.Name, 128), capTo(resp.AgentInfo.Version, 64)
	}
	if info.ProtocolVersion != ProtocolVersion {
		return info, &ProtocolError{Op: "initialize", Msg: fmt.Sprintf("the agent speaks ACP version %d, the engine %d", info.ProtocolVersion, ProtocolVersion)}
	}
	c.mu.Lock()
	c.agent, c.ready = info, true
	c.mu.Unlock()
	return info, nil
}

// NewSession opens a conversation in cwd (an absolute path; the CLI's working directory for its
// tools) with no MCP servers (the CLI accepts but never starts them, docs/acp.md §3). policy answers the
// session's permission requests; nil rejects every tool call.
func (c *Conn) NewSession(ctx context.Context, cwd string, policy Policy) (*Session, error) {
	if err := c.needReady("session/new"); err != nil {
		return nil, err
	}
	resp, err := call(ctx, func(ctx context.Context) (sdk.NewSessionResponse, error) {
		return c.sdk.NewSession(ctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	})
	if err != nil {
		return nil, c.wrap("session/new", err)
	}
	id := string(resp.SessionId)
	if !validSessionID(id) {
		return nil, &ProtocolError{Op: "session/new", Msg: fmt.Sprintf("the agent returned an invalid session id %q", capTo(id, 80))}
	}
	s := newSession(c, id, policy)
	c.mu.Lock()
	c.sessions[id] = s
	c.mu.Unlock()
	return s, nil
}

// LoadSession continues a stored conversation (possibly of an earlier process with the same data
// dir). The agent replays the history as updates before it answers (Session.History). An unknown
// id is a *SessionNotFoundError; an agent that did not advertise loadSession gets
// ErrLoadUnsupported without a request. The model is reset by a load (docs/acp.md §4): call SetModel.
func (c *Conn) LoadSession(ctx context.Context, id, cwd string, policy Policy) (*Session, error) {
	if err := c.needReady("session/load"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	load := c.agent.LoadSession
	_, dup := c.sessions[id]
	c.mu.Unlock()
	if !load {
		return nil, ErrLoadUnsupported
	}
	if !validSessionID(id) {
		return nil, &SessionNotFoundError{ID: id}
	}
	if dup {
		return nil, fmt.Errorf("session/load %s: the session is already open on this connection", id)
	}
	s := newSession(c, id, policy)
	s.loading = true
	c.mu.Lock()
	c.sessions[id] = s
	c.mu.Unlock()
	_, err := call(ctx, func(ctx context.Context) (sdk.LoadSessionResponse, error) {
		return c.sdk.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: sdk.SessionId(id), Cwd: cwd, McpServers: []sdk.McpServer{}})
	})
	s.mu.Lock()
	s.loading = false
	s.mu.Unlock()
	if err != nil {
		c.forget(id)
		var re *sdk.RequestError
		if errors.As(err, &re) && re.Code == codeResourceNotFound {
			return nil, &SessionNotFoundError{ID: id, Message: capTo(re.Message, 512)}
		}
		return nil, c.wrap("session/load", err)
	}
	return s, nil
}

// Close closes the agent's stdin (when it is an io.Closer), which makes the CLI exit, and waits
// up to CloseGrace for its stdout to end. It reports ErrUnresponsive when the stream is still
// open: the caller kills the process. Idempotent.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		if cl, ok := c.stdin.(io.Closer); ok {
			_ = cl.Close()
		}
		t := time.NewTimer(c.opts.CloseGrace)
		defer t.Stop()
		select {
		case <-c.sdk.Done():
		case <-t.C:
			c.closeErr = ErrUnresponsive
		}
	})
	return c.closeErr
}

func (c *Conn) needReady(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return fmt.Errorf("%s: the connection is not initialized", op)
	}
	return nil
}

func (c *Conn) session(id string) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

func (c *Conn) forget(id string) {
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
}

// call runs one SDK request but returns when ctx ends even if the request is stuck writing to an
// agent that stopped reading its stdin (the SDK's write ignores ctx). The stuck goroutine ends
// when Close closes stdin; a caller whose ctx ended should Close (and kill) the agent.
func call[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// wrap turns an SDK error into the engine's: a JSON-RPC error of the agent stays an *RPCError;
// the SDK's own "peer disconnected" (or any failure once the stream ended) is ErrConnectionLost.
func (c *Conn) wrap(op string, err error) error {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		if m, ok := re.Data.(map[string]any); ok && re.Code == -32603 {
			if e, _ := m["error"].(string); strings.HasPrefix(e, "peer disconnected") {
				return fmt.Errorf("%s: %w", op, ErrConnectionLost)
			}
		}
		if re.Code == -32800 { // the SDK's answer to our own ctx ending
			return fmt.Errorf("%s: %w", op, context.Canceled)
		}
		return &RPCError{Op: op, Code: re.Code, Message: capTo(re.Message, maxMessage), Detail: capTo(detail(re.Data), maxMessage)}
	}
	select {
	case <-c.sdk.Done():
		return fmt.Errorf("%s: %w", op, ErrConnectionLost)
	default:
	}
	return fmt.Errorf("%s: %w", op, err)
}
