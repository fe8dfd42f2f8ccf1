package acp

import (
	"context"
	"encoding/json"
	"errors"

	sdk "github.com/coder/acp-go-sdk"
)

// errNotOffered answers the client methods the engine does not offer (fs/*, terminal/*): Cline
// never calls them (docs/acp.md §5), and a hostile agent gets nothing from them.
var errNotOffered = errors.New("cline-mcp does not offer this method")

// handler is the engine's acp.Client: the agent's requests and notifications to us. The SDK
// runs notifications one at a time in order, and each request on its own goroutine.
type handler struct{ c *Conn }

func (h *handler) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	defer h.c.gate.release()
	if s := h.c.session(string(n.SessionId)); s != nil {
		s.update(n.Update)
	}
	return nil
}

// RequestPermission asks the session's policy. The answer is an allow_once or reject_once
// option (never allow_always, which the CLI does not remember anyway, docs/acp.md §5), or "cancelled"
// when the turn is being cancelled, when there is no turn, or when the agent offered no fitting
// option.
func (h *handler) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	s := h.c.session(string(p.SessionId))
	if s == nil {
		return cancelledOutcome(), nil
	}
	call := toolCallOf(p)
	d, ok := s.decide(ctx, call)
	if !ok {
		return cancelledOutcome(), nil
	}
	want := []sdk.PermissionOptionKind{sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways}
	if d.Allow {
		want = []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce}
	}
	for _, k := range want {
		for _, o := range p.Options {
			if o.Kind == k {
				return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{
					Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: o.OptionId, Outcome: "selected"},
				}}, nil
			}
		}
	}
	return cancelledOutcome(), nil
}

func cancelledOutcome() sdk.RequestPermissionResponse {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{
		Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"},
	}}
}

func toolCallOf(p sdk.RequestPermissionRequest) ToolCall {
	tc := p.ToolCall
	c := ToolCall{SessionID: string(p.SessionId), ID: capTo(string(tc.ToolCallId), 256)}
	if tc.Kind != nil {
		c.Kind = capTo(string(*tc.Kind), 64)
	}
	if tc.Title != nil {
		c.Title = capTo(*tc.Title, 256)
		c.Tool = toolName(*tc.Title)
	}
	if tc.RawInput != nil {
		if b, err := json.Marshal(tc.RawInput); err == nil && len(b) <= maxInput {
			c.Input = b
		}
	}
	return c
}

func (h *handler) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errNotOffered
}

func (h *handler) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errNotOffered
}

func (h *handler) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNotOffered
}

func (h *handler) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNotOffered
}

func (h *handler) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNotOffered
}

func (h *handler) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNotOffered
}

func (h *handler) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNotOffered
}
