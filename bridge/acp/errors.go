package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// JSON-RPC error codes Cline 3.0.65 answers with (docs/acp.md §1, §4, §8).
const (
	codeInternal         = -32603 // provider failures ("Internal error: <provider message>")
	codeAuthRequired     = -32000 // no CLINE_API_KEY; auth-classified provider errors
	codeResourceNotFound = -32002 // session/load of an unknown id
)

// maxMessage caps every message the engine keeps from the agent.
const maxMessage = 4 << 10

var (
	// ErrConnectionLost: the agent's stdout ended before the answer (the process exited).
	ErrConnectionLost = errors.New("the ACP connection was lost (cline exited or closed its stdout)")
	// ErrUnresponsive: the agent neither answered a cancel within CancelGrace nor ended its
	// stream within CloseGrace after stdin closed. The caller must kill the process.
	ErrUnresponsive = errors.New("cline did not stop after session/cancel and stdin close; kill it")
	// ErrLoadUnsupported: the agent did not advertise loadSession.
	ErrLoadUnsupported = errors.New("session/load: the agent does not advertise loadSession")
	// ErrTurnActive: Prompt was called while a turn of the same session was running.
	ErrTurnActive = errors.New("session/prompt: a turn of this session is already running")
)

// RPCError is a JSON-RPC error the agent answered a request with. Provider failures come this
// way, not as a stopReason (docs/acp.md §8).
type RPCError struct {
	Op      string // the request: initialize, session/new, session/prompt, ...
	Code    int
	Message string // the agent's message, e.g. "Internal error: Incorrect API key provided: ..."
	Detail  string // data.message when the agent sent one, else data as JSON
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("%s: JSON-RPC error %d: %s", e.Op, e.Code, e.Message)
}

// ProviderMessage is the provider's own text: data.message, else the message without the
// JSON-RPC prefix ("Internal error: ", "Authentication required: ").
func (e *RPCError) ProviderMessage() string {
	if e.Detail != "" && !strings.HasPrefix(e.Detail, "{") {
		return e.Detail
	}
	return rpcPrefix.ReplaceAllString(e.Message, "")
}

// Auth reports whether the agent classified the failure as authentication (-32000).
func (e *RPCError) Auth() bool { return e.Code == codeAuthRequired }

var rpcPrefix = regexp.MustCompile(`^(Internal error|Authentication required|Invalid params|Resource not found): `)

// SessionNotFoundError: session/load named a session the agent does not have (-32002), or an id
// that cannot be a session id.
type SessionNotFoundError struct {
	ID      string
	Message string
}

func (e *SessionNotFoundError) Error() string {
	return fmt.Sprintf("session/load: no session %q", capTo(e.ID, 80))
}

// ProtocolError: the agent broke the protocol (another version, an invalid session id).
type ProtocolError struct {
	Op, Msg string
}

func (e *ProtocolError) Error() string { return e.Op + ": " + e.Msg }

// detail renders JSON-RPC error data: its "message" member when it has one.
func detail(data any) string {
	switch d := data.(type) {
	case nil:
		return ""
	case string:
		return d
	case map[string]any:
		if m, ok := d["message"].(string); ok {
			return m
		}
	}
	b, _ := json.Marshal(data)
	return string(b)
}

var sessionIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// validSessionID accepts what can safely name a directory (Cline's ids look like
// "1796278600502_lmK-X_cli"): no separators, no "..", bounded.
func validSessionID(id string) bool {
	return sessionIDRe.MatchString(id) && !strings.Contains(id, "..")
}

// capTo cuts s to max bytes on a rune boundary, with a visible ellipsis.
func capTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
