// Package fakeprovider is a scripted OpenAI-compatible chat-completions server for the contract
// suite: it answers POST <base>/chat/completions with plain text, reasoning deltas, tool calls,
// HTTP errors with OpenAI-style bodies, or a hang, streamed as SSE when the request asks for it
// (the Cline CLI always does) and as one JSON body otherwise. It records every request (headers
// and body). It listens on 127.0.0.1 only, or on a Unix socket that a relay (./relay) in a
// container's network namespace forwards to. The answers mirror the fake provider the recordings in
// bridge/cline/testdata/recordings were made against: 12-character text pieces,
// 40-character argument pieces, a usage chunk when stream_options.include_usage is set.
package fakeprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Kinds of Step.
const (
	KindText  = "text"  // Text (and optional Reasoning), finish_reason "stop"
	KindTools = "tools" // optional Text, then Calls, finish_reason "tool_calls"
	KindError = "error" // Status with an OpenAI-style error body and Headers
	KindHang  = "hang"  // never answers (Phase "" or "before_headers") or stalls after the first chunk ("mid_stream")
)

// Call is one tool call the model makes.
type Call struct {
	Name      string
	Arguments map[string]any
}

// Step is the answer to one chat request.
type Step struct {
	Kind           string
	Text           string
	Reasoning      string
	ReasoningField string // "reasoning_content" (default) or "reasoning"
	Calls          []Call
	Status         int               // KindError
	Body           any               // KindError; nil = DefaultError(Status)
	Headers        map[string]string // KindError; nil = DefaultError(Status)
	Phase          string            // KindHang
}

// Text is a plain answer.
func Text(s string) Step { return Step{Kind: KindText, Text: s} }

// Tools is an answer that calls tools.
func Tools(calls ...Call) Step { return Step{Kind: KindTools, Calls: calls} }

// Error is an HTTP error with the default body for status and the given headers (nil: defaults).
func Error(status int, headers map[string]string) Step {
	return Step{Kind: KindError, Status: status, Headers: headers}
}

// Hang never answers; the handler returns when the client goes away or the provider closes.
func Hang() Step { return Step{Kind: KindHang} }

// Request is one recorded HTTP request.
type Request struct {
	Index  int // position among chat requests (0-based); -1 for other paths
	Time   time.Time
	Method string
	Path   string
	Header http.Header
	Raw    []byte
	Body   map[string]any // nil when the body is not a JSON object
}

// Responder picks the answer to chat request i. It runs on the request's goroutine.
type Responder func(i int, r Request) Step

// Script answers request i with steps[i], and every later request with the last step.
func Script(steps ...Step) Responder {
	return func(i int, _ Request) Step {
		if len(steps) == 0 {
			return Text("PONG")
		}
		return steps[min(i, len(steps)-1)]
	}
}

// Provider is a running fake.
type Provider struct {
	srv    *http.Server
	ln     net.Listener
	base   string // BaseURL when the provider is reached through a relay
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	respond  Responder
	refresh  RefreshResponder
	codex    RefreshResponder
	requests []Request
	chats    int
	waiters  []waiter
}

// RefreshPath is where the Cline provider refreshes its OAuth token: the CLI posts
// {"refreshToken","grantType":"refresh_token"} to <baseUrl's origin>/api/v1/auth/refresh
// (cline/cline sdk/packages/core/src/auth/cline.ts) and expects {"success":true,"data":{...}}.
const RefreshPath = "/api/v1/auth/refresh"

// RefreshResponder answers a token refresh request with a status and a JSON body.
type RefreshResponder func(r Request) (status int, body any)

// ClineRefresh answers every refresh with new tokens in the shape the Cline provider reads:
// accessToken, refreshToken, expiresAt (ISO time, an hour ahead), tokenType and userInfo (whose
// clineUserId becomes the stored accountId).
func ClineRefresh(accessToken, refreshToken, accountID string) RefreshResponder {
	return func(Request) (int, any) {
		return http.StatusOK, map[string]any{"success": true, "data": map[string]any{
			"accessToken":  accessToken,
			"refreshToken": refreshToken,
			"expiresAt":    time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano),
			"tokenType":    "Bearer",
			"userInfo":     map[string]any{"clineUserId": accountID, "email": "fake@example.invalid"},
		}}
	}
}

// CodexTokenPath is where the openai-codex provider refreshes its OAuth token: the CLI posts the
// form grant_type=refresh_token&refresh_token=…&client_id=… to https://auth.openai.com/oauth/token
// (cline/cline sdk/packages/core/src/auth/codex.ts) and expects {access_token, refresh_token,
// expires_in, id_token?}. A recorded request's Body holds the form's fields.
const CodexTokenPath = "/oauth/token"

// CodexRefresh answers every codex refresh with new tokens that expire in an hour; idToken ("" =
// none) is where the CLI reads the ChatGPT account id.
func CodexRefresh(accessToken, refreshToken, idToken string) RefreshResponder {
	return func(Request) (int, any) {
		body := map[string]any{"access_token": accessToken, "refresh_token": refreshToken, "expires_in": 3600, "token_type": "Bearer"}
		if idToken != "" {
			body["id_token"] = idToken
		}
		return http.StatusOK, body
	}
}

// SetCodexRefresh installs the answer to CodexTokenPath (nil: 404).
func (p *Provider) SetCodexRefresh(r RefreshResponder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.codex = r
}

// Refreshes returns the recorded token refresh requests (RefreshPath and CodexTokenPath).
func (p *Provider) Refreshes() []Request {
	var out []Request
	for _, r := range p.Requests() {
		if r.Method == http.MethodPost && (r.Path == RefreshPath || r.Path == CodexTokenPath) {
			out = append(out, r)
		}
	}
	return out
}

// SetRefresh installs the answer to RefreshPath (nil: 404, like any unknown path).
func (p *Provider) SetRefresh(r RefreshResponder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refresh = r
}

type waiter struct {
	n  int
	ch chan struct{}
}

// Start listens on 127.0.0.1 (a free port) and serves until Close. A nil responder answers PONG.
func Start(respond Responder) (*Provider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen fake provider: %w", err)
	}
	return Serve(ln, "", respond), nil
}

// Serve serves on a listener the caller made — a Unix socket that a relay in another network
// namespace forwards to (contract/fakeprovider/relay) — until Close, which also closes ln.
// baseURL is what clients use to reach it (BaseURL); "" means http://<ln's address>/v1.
func Serve(ln net.Listener, baseURL string, respond Responder) *Provider {
	if respond == nil {
		respond = Script()
	}
	p := &Provider{ln: ln, base: baseURL, closed: make(chan struct{}), respond: respond}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p
}

// BaseURL is the value for providers.json's baseUrl: http://127.0.0.1:PORT/v1.
func (p *Provider) BaseURL() string {
	if p.base != "" {
		return p.base
	}
	return "http://" + p.ln.Addr().String() + "/v1"
}

// SetResponder replaces the script and resets the chat request counter.
func (p *Provider) SetResponder(r Responder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.respond, p.chats = r, 0
}

// Requests returns a copy of every request so far.
func (p *Provider) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// Chats returns the recorded chat-completion requests.
func (p *Provider) Chats() []Request {
	var out []Request
	for _, r := range p.Requests() {
		if r.Index >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// Arrived returns a channel that is closed once n chat requests have been recorded.
func (p *Provider) Arrived(n int) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	if p.chatCount() >= n {
		close(ch)
		return ch
	}
	p.waiters = append(p.waiters, waiter{n, ch})
	return ch
}

func (p *Provider) chatCount() int {
	n := 0
	for _, r := range p.requests {
		if r.Index >= 0 {
			n++
		}
	}
	return n
}

// Close stops the server and releases hanging handlers.
func (p *Provider) Close() error {
	var err error
	p.once.Do(func() {
		close(p.closed)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err = p.srv.Shutdown(ctx); err != nil {
			err = p.srv.Close()
		}
	})
	return err
}

// ServeHTTP records the request and answers it.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Request{Index: -1, Time: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	var body map[string]any
	if json.Unmarshal(raw, &body) == nil {
		rec.Body = body
	} else if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if form, err := url.ParseQuery(string(raw)); err == nil {
			rec.Body = map[string]any{}
			for k := range form {
				rec.Body[k] = form.Get(k)
			}
		}
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	isChat := r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions")
	p.mu.Lock()
	if isChat {
		rec.Index = p.chats
		p.chats++
	}
	respond, refresh, codex := p.respond, p.refresh, p.codex
	p.requests = append(p.requests, rec)
	n := p.chatCount()
	kept := p.waiters[:0]
	for _, wt := range p.waiters {
		if n >= wt.n {
			close(wt.ch)
		} else {
			kept = append(kept, wt)
		}
	}
	p.waiters = kept
	p.mu.Unlock()

	switch {
	case isChat:
		p.answer(w, r, respond(rec.Index, rec), rec.Body)
	case r.Method == http.MethodPost && path == RefreshPath && refresh != nil:
		status, body := refresh(rec)
		writeJSON(w, status, body, nil)
	case r.Method == http.MethodPost && path == CodexTokenPath && codex != nil:
		status, body := codex(rec)
		writeJSON(w, status, body, nil)
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "fake-model", "object": "model", "created": 1700000000, "owned_by": "fake"},
			map[string]any{"id": "fake-model-2", "object": "model", "created": 1700000000, "owned_by": "fake"},
		}}, nil)
	default:
		writeJSON(w, http.StatusNotFound, errBody("not found", "invalid_request_error", nil), nil)
	}
}

func errBody(msg, typ string, code any) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
}

// DefaultError returns the body and headers the recordings' fake sent for status.
func DefaultError(status int) (any, map[string]string) {
	switch status {
	case 429:
		return errBody("Rate limit reached for requests. Limit: 3 / min. Please try again in 20s.", "requests", "rate_limit_exceeded"),
			map[string]string{"retry-after": "20", "x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20s"}
	case 500:
		return errBody("The server had an error while processing your request. Sorry about that!", "server_error", nil), nil
	case 503:
		return errBody("The engine is currently overloaded / temporarily unavailable, please try again later", "server_error", "service_unavailable"), nil
	case 401:
		return errBody("Incorrect API key provided: sk-test-***123. You can find your API key at https://example.invalid/api-keys.", "invalid_request_error", "invalid_api_key"), nil
	}
	return errBody("error", "server_error", nil), nil
}

func writeJSON(w http.ResponseWriter, status int, v any, headers map[string]string) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	for k, val := range headers {
		w.Header().Set(k, val)
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func usage() map[string]any {
	return map[string]any{"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290}
}

func callID(i int) string { return fmt.Sprintf("call_fake_%d_%d", time.Now().UnixMilli()%100000, i) }

func (p *Provider) answer(w http.ResponseWriter, r *http.Request, s Step, body map[string]any) {
	model, _ := body["model"].(string)
	if model == "" {
		model = "fake-model"
	}
	stream, _ := body["stream"].(bool)
	switch s.Kind {
	case KindError:
		b, h := DefaultError(s.Status)
		if s.Body != nil {
			b = s.Body
		}
		if s.Headers != nil {
			h = s.Headers
		}
		writeJSON(w, s.Status, b, h)
		return
	case KindHang:
		if s.Phase == "mid_stream" {
			newSSE(w).chunk(model, map[string]any{"role": "assistant", "content": ""}, nil)
		}
		select {
		case <-r.Context().Done():
		case <-p.closed:
		}
		return
	}
	field := s.ReasoningField
	if field == "" {
		field = "reasoning_content"
	}
	finish := "stop"
	if len(s.Calls) > 0 {
		finish = "tool_calls"
	}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": s.Text}
		if s.Reasoning != "" {
			msg[field] = s.Reasoning
		}
		if len(s.Calls) > 0 {
			var calls []any
			for i, c := range s.Calls {
				args, _ := json.Marshal(c.Arguments)
				calls = append(calls, map[string]any{"id": callID(i), "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": string(args)}})
			}
			msg["tool_calls"] = calls
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(),
			"model": model, "choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage()}, nil)
		return
	}
	sse := newSSE(w)
	sse.chunk(model, map[string]any{"role": "assistant", "content": ""}, nil)
	for _, piece := range pieces(s.Reasoning, 12) {
		sse.chunk(model, map[string]any{field: piece}, nil)
	}
	for _, piece := range pieces(s.Text, 12) {
		sse.chunk(model, map[string]any{"content": piece}, nil)
	}
	for i, c := range s.Calls {
		args, _ := json.Marshal(c.Arguments)
		sse.chunk(model, map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID(i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)
		for _, piece := range pieces(string(args), 40) {
			sse.chunk(model, map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": piece}}}}, nil)
		}
	}
	sse.chunk(model, map[string]any{}, finish)
	if so, _ := body["stream_options"].(map[string]any); so != nil && so["include_usage"] == true {
		sse.event(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(),
			"model": model, "choices": []any{}, "usage": usage()})
	}
	sse.raw("data: [DONE]\n\n")
}

type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	s := &sseWriter{w: w, f: f}
	s.flush()
	return s
}

func (s *sseWriter) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sseWriter) raw(line string) {
	_, _ = io.WriteString(s.w, line)
	s.flush()
}

func (s *sseWriter) event(v any) {
	b, _ := json.Marshal(v)
	s.raw("data: " + string(b) + "\n\n")
}

func (s *sseWriter) chunk(model string, delta map[string]any, finish any) {
	s.event(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": time.Now().Unix(),
		"model": model, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
}

func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// SystemPrompt returns the system message of a recorded chat request.
func (r Request) SystemPrompt() string {
	for _, m := range r.Messages() {
		if m[0] == "system" {
			return m[1]
		}
	}
	return ""
}

// Messages returns the role and text of every message of a chat request.
func (r Request) Messages() [][2]string {
	var out [][2]string
	msgs, _ := r.Body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		out = append(out, [2]string{role, contentText(mm["content"])})
	}
	return out
}

// ToolNames returns the names of the tools a chat request offers the model.
func (r Request) ToolNames() []string {
	var out []string
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		if n, _ := fn["name"].(string); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// WorkingDirectory extracts the "Working Directory: <path>" line Cline puts in its system prompt.
func (r Request) WorkingDirectory() string {
	for _, l := range strings.Split(r.SystemPrompt(), "\n") {
		if _, after, ok := strings.Cut(l, "Working Directory: "); ok {
			return strings.TrimSpace(after)
		}
	}
	return ""
}

func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, part := range v {
			pm, _ := part.(map[string]any)
			if t, ok := pm["text"].(string); ok {
				b.WriteString(t)
			}
		}
		return b.String()
	}
	return ""
}
