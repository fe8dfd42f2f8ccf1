//go:build e2e && linux

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// fakeAnthropic is a scripted Anthropic Messages API (POST /v1/messages) for Claude Code: while
// calls remain it answers a request that offers the tool with a tool_use block for the next
// call, otherwise with the text "Done.". It answers streaming requests with server-sent events
// and the others with one JSON body. With truncate, a streaming answer stops after
// message_start, which makes Claude Code fall back to a non-streaming request — the way to
// exercise both paths. It records every request. It listens on loopback only.
type fakeAnthropic struct {
	calls    []toolUse
	truncate bool
	// script, when set, replaces the calls: it returns the content blocks (text and tool_use) of
	// the answer to a request; a tool_use among them makes the stop reason tool_use.
	script func(req messagesRequest) []map[string]any

	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	requests []apiRequest
}

// toolUse is one tool call the fake model makes: name as Claude Code exposes it
// (mcp__<server>__<tool>), and the input.
type toolUse struct {
	Name  string
	Input map[string]any
}

// apiRequest is one recorded POST /v1/messages.
type apiRequest struct {
	Path   string
	Stream bool
	Body   messagesRequest
	Raw    []byte // the body as sent
}

type messagesRequest struct {
	Model    string       `json:"model"`
	Stream   bool         `json:"stream"`
	Tools    []apiTool    `json:"tools"`
	Messages []apiMessage `json:"messages"`
}

type apiTool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"input_schema"`
	DeferLoading bool           `json:"defer_loading"`
}

type apiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

// block is a content block of a message (the fields the tests read).
type block struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`   // tool_use
	Name      string          `json:"name"` // tool_use
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or a list of text blocks
}

func (m apiMessage) blocks() []block {
	var bs []block
	if json.Unmarshal(m.Content, &bs) != nil {
		return nil
	}
	return bs
}

// toolResults lists every tool_result block the request carries, in conversation order.
func (r apiRequest) toolResults() []block {
	var out []block
	for _, m := range r.Body.Messages {
		for _, b := range m.blocks() {
			if b.Type == "tool_result" {
				out = append(out, b)
			}
		}
	}
	return out
}

// text is a tool_result's content as one string (Claude Code sends a string, or text blocks).
func (b block) text() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []block
	_ = json.Unmarshal(b.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "")
}

// startFakeAnthropic listens on 127.0.0.1 of the calling thread's network namespace.
func startFakeAnthropic(calls []toolUse, truncate bool) (*fakeAnthropic, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeAnthropic{calls: calls, truncate: truncate, ln: ln}
	f.srv = &http.Server{Handler: f}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// URL is the value for ANTHROPIC_BASE_URL.
func (f *fakeAnthropic) URL() string { return "http://" + f.ln.Addr().String() }

func (f *fakeAnthropic) Close() { _ = f.srv.Close() }

// Requests returns the recorded message requests.
func (f *fakeAnthropic) Requests() []apiRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiRequest(nil), f.requests...)
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 100})
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
	default:
		http.NotFound(w, r) // Claude Code probes GET / once; nothing else is needed
		return
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, fmt.Sprintf(`{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, err.Error()), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, apiRequest{Path: r.URL.String(), Stream: req.Stream, Body: req, Raw: body})
	f.mu.Unlock()

	msg := f.answer(req)
	if !req.Stream {
		writeJSON(w, msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	event("message_start", map[string]any{"type": "message_start", "message": start})
	if f.truncate {
		return // no content block: Claude Code retries without streaming
	}
	for i, c := range msg["content"].([]map[string]any) {
		switch c["type"] {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		case "tool_use":
			input, _ := json.Marshal(c["input"])
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// answer is the next turn of the script for a request: a tool_use while calls remain and the
// request offers that tool, else the final text.
func (f *fakeAnthropic) answer(req messagesRequest) map[string]any {
	done := len(apiRequest{Body: req}.toolResults())
	content := []map[string]any{{"type": "text", "text": "Done."}}
	stop := "end_turn"
	if done < len(f.calls) && offers(req, f.calls[done].Name) {
		c := f.calls[done]
		content = []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_fake_%d", done+1), "name": c.Name, "input": c.Input}}
		stop = "tool_use"
	}
	if f.script != nil {
		content, stop = f.script(req), "end_turn"
		for _, c := range content {
			if c["type"] == "tool_use" {
				stop = "tool_use"
			}
		}
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_fake_%d", done+1), "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 5},
	}
}

func offers(req messagesRequest, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b.Bytes())
}
