//go:build e2e && linux

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// fakeResponses is a scripted OpenAI Responses API (POST /v1/responses, server-sent events) for
// Codex: while calls remain it answers a request that offers the call's tool with a
// function_call item, otherwise with an assistant message quoting the last tool output Codex
// sent. It records every request and listens on loopback only.
type fakeResponses struct {
	calls []codexCall

	ln  net.Listener
	srv *http.Server

	mu       sync.Mutex
	requests []responsesCall
}

// codexCall is one tool call the fake model makes. Codex 0.171 offers an MCP server's tools as
// one tool of type "namespace" named mcp__<server>, and the model calls them by namespace and
// name.
type codexCall struct {
	Namespace string
	Name      string
	Args      map[string]any
}

// responsesCall is one recorded POST /v1/responses.
type responsesCall struct {
	Path string
	Body responsesRequest
	Raw  []byte
}

type responsesRequest struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Tools  []responsesTool `json:"tools"`
	Input  []inputItem     `json:"input"`
}

// responsesTool is a tool offered to the model: a function, or a namespace holding functions.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  map[string]any  `json:"parameters"`
	Tools       []responsesTool `json:"tools"`
}

// inputItem is an item of the conversation Codex sends (the fields the tests read).
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	CallID    string          `json:"call_id"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"` // function_call_output: a string or content items
}

// text is a function_call_output's output as one string.
func (it inputItem) text() string {
	var s string
	if json.Unmarshal(it.Output, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(it.Output, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "")
}

// outputs are the function_call_output items of a request, in conversation order.
func (r responsesRequest) outputs() []inputItem {
	var out []inputItem
	for _, it := range r.Input {
		if it.Type == "function_call_output" {
			out = append(out, it)
		}
	}
	return out
}

// tool finds a function offered to the model, inside its namespace when namespace is set.
func (r responsesRequest) tool(namespace, name string) (responsesTool, bool) {
	for _, t := range r.Tools {
		if namespace == "" && t.Type == "function" && t.Name == name {
			return t, true
		}
		if t.Type == "namespace" && t.Name == namespace {
			for _, f := range t.Tools {
				if f.Name == name {
					return f, true
				}
			}
		}
	}
	return responsesTool{}, false
}

func startFakeResponses(calls []codexCall) (*fakeResponses, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeResponses{calls: calls, ln: ln}
	f.srv = &http.Server{Handler: f}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// URL is the provider's base_url.
func (f *fakeResponses) URL() string { return "http://" + f.ln.Addr().String() + "/v1" }

func (f *fakeResponses) Close() { _ = f.srv.Close() }

// Requests returns the recorded model requests.
func (f *fakeResponses) Requests() []responsesCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]responsesCall(nil), f.requests...)
}

func (f *fakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, fmt.Sprintf(`{"error":{"type":"invalid_request_error","message":%q}}`, err.Error()), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, responsesCall{Path: r.URL.String(), Body: req, Raw: body})
	n := len(f.requests)
	f.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	event := func(name string, data map[string]any) {
		data["type"] = name
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	id := fmt.Sprintf("resp_fake_%d", n)
	event("response.created", map[string]any{"response": map[string]any{"id": id}})
	event("response.output_item.done", map[string]any{"item": f.answer(req)})
	event("response.completed", map[string]any{"response": map[string]any{"id": id, "usage": map[string]any{
		"input_tokens": 100, "input_tokens_details": nil, "output_tokens": 5, "output_tokens_details": nil, "total_tokens": 105}}})
}

// answer is the next item of the script: a function_call while calls remain and the request
// offers that tool, else the final message with the last tool output.
func (f *fakeResponses) answer(req responsesRequest) map[string]any {
	outs := req.outputs()
	done := len(outs)
	if done < len(f.calls) {
		if c := f.calls[done]; func() bool { _, ok := req.tool(c.Namespace, c.Name); return ok }() {
			args, _ := json.Marshal(c.Args)
			return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake_%d", done+1),
				"call_id": fmt.Sprintf("call_fake_%d", done+1), "namespace": c.Namespace, "name": c.Name, "arguments": string(args)}
		}
	}
	text := "Done."
	if done > 0 {
		text = "Cline's output: " + outs[done-1].text()
	}
	return map[string]any{"type": "message", "id": fmt.Sprintf("msg_fake_%d", done+1), "role": "assistant",
		"content": []map[string]any{{"type": "output_text", "text": text}}}
}
