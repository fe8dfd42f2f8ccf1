package fakeprovider

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, ctx context.Context, p *Provider, body map[string]any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.BaseURL()+"/chat/completions", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk-test-123")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func start(t *testing.T, r Responder) *Provider {
	t.Helper()
	p, err := Start(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// sseDeltas reads an SSE stream and returns the concatenated content, reasoning and tool
// arguments, the finish reason, whether a usage chunk and [DONE] came.
func sseDeltas(t *testing.T, r io.Reader) (content, reasoning string, args map[int]string, names map[int]string, finish string, usage, done bool) {
	t.Helper()
	args, names = map[int]string{}, map[int]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int `json:"index"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if chunk.Usage != nil {
			usage = true
		}
		for _, c := range chunk.Choices {
			content += c.Delta.Content
			reasoning += c.Delta.ReasoningContent
			for _, tc := range c.Delta.ToolCalls {
				args[tc.Index] += tc.Function.Arguments
				if tc.Function.Name != "" {
					names[tc.Index] = tc.Function.Name
				}
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	return
}

func TestStreamedTextAndReasoning(t *testing.T) {
	p := start(t, Script(Step{Kind: KindText, Reasoning: "thinking hard about it", Text: "Line one.\n\nLine two with `code`.\n"}))
	res := post(t, t.Context(), p, map[string]any{"model": "m1", "stream": true, "stream_options": map[string]any{"include_usage": true}, "messages": []any{}})
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("got Content-Type %q, want text/event-stream", ct)
	}
	content, reasoning, _, _, finish, usage, done := sseDeltas(t, res.Body)
	if content != "Line one.\n\nLine two with `code`.\n" || reasoning != "thinking hard about it" {
		t.Errorf("got content %q reasoning %q", content, reasoning)
	}
	if finish != "stop" || !usage || !done {
		t.Errorf("got finish %q usage %v done %v, want stop true true", finish, usage, done)
	}
}

func TestStreamedToolCalls(t *testing.T) {
	long := strings.Repeat("x", 100)
	p := start(t, Script(Tools(Call{Name: "editor", Arguments: map[string]any{"path": "/r/a.txt", "new_text": long}}, Call{Name: "read_files", Arguments: map[string]any{"files": []string{"/r/b"}}})))
	res := post(t, t.Context(), p, map[string]any{"stream": true})
	defer res.Body.Close()
	_, _, args, names, finish, usage, _ := sseDeltas(t, res.Body)
	if finish != "tool_calls" || usage {
		t.Errorf("got finish %q usage %v, want tool_calls and no usage chunk (not asked for)", finish, usage)
	}
	if names[0] != "editor" || names[1] != "read_files" {
		t.Errorf("got tool names %v", names)
	}
	var a map[string]any
	if err := json.Unmarshal([]byte(args[0]), &a); err != nil || a["new_text"] != long || a["path"] != "/r/a.txt" {
		t.Errorf("editor arguments reassembled to %q (%v)", args[0], err)
	}
}

func TestNonStreamed(t *testing.T) {
	p := start(t, Script(Step{Kind: KindTools, Text: "calling", Calls: []Call{{Name: "editor", Arguments: map[string]any{"path": "p"}}}}))
	res := post(t, t.Context(), p, map[string]any{"model": "m2", "stream": false})
	defer res.Body.Close()
	var body struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Function struct{ Name, Arguments string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "m2" || len(body.Choices) != 1 || body.Choices[0].FinishReason != "tool_calls" || body.Usage["prompt_tokens"] != 1234 {
		t.Fatalf("got %+v", body)
	}
	m := body.Choices[0].Message
	if m.Content != "calling" || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "editor" || m.ToolCalls[0].Function.Arguments != `{"path":"p"}` {
		t.Errorf("got message %+v", m)
	}
}

func TestErrorsAndScriptOrder(t *testing.T) {
	p := start(t, Script(Error(429, map[string]string{"retry-after": "0"}), Error(401, nil), Text("PONG")))
	cases := []struct {
		status int
		header string
		msg    string
	}{{429, "0", "Rate limit"}, {401, "", "Incorrect API key"}, {200, "", ""}, {200, "", ""}}
	for i, c := range cases {
		res := post(t, t.Context(), p, map[string]any{"stream": true})
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status || res.Header.Get("retry-after") != c.header || !strings.Contains(string(b), c.msg) {
			t.Errorf("request %d: got %d retry-after %q body %q, want %d %q %q", i, res.StatusCode, res.Header.Get("retry-after"), b, c.status, c.header, c.msg)
		}
	}
	chats := p.Chats()
	if len(chats) != 4 || chats[3].Index != 3 || chats[0].Header.Get("Authorization") != "Bearer sk-test-123" || chats[0].Body["stream"] != true {
		t.Errorf("recorded %d chats, first %+v", len(chats), chats[0])
	}
}

func TestHangEndsWhenTheClientLeaves(t *testing.T) {
	p := start(t, Script(Hang()))
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"stream": true})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.BaseURL()+"/chat/completions", strings.NewReader(string(b)))
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-p.Arrived(1):
	case <-time.After(10 * time.Second):
		t.Fatal("the request never arrived")
	}
	select {
	case err := <-errc:
		t.Fatalf("a hanging step answered: %v", err)
	default:
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want the client's cancellation", err)
	}
	// Close must not wait for the hanging handler.
	done := make(chan struct{})
	go func() { _ = p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(6 * time.Second):
		t.Fatal("Close blocked")
	}
}

func TestRequestHelpers(t *testing.T) {
	r := Request{Body: map[string]any{
		"messages": []any{
			map[string]any{"role": "system", "content": "You are Cline.\n4. Working Directory: /tmp/w\nmore"},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi "}, map[string]any{"type": "text", "text": "there"}}},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "read_files"}}},
	}}
	if got := r.WorkingDirectory(); got != "/tmp/w" {
		t.Errorf("got working directory %q, want /tmp/w", got)
	}
	if got := r.Messages(); len(got) != 2 || got[1] != [2]string{"user", "hi there"} {
		t.Errorf("got messages %q", got)
	}
	if got := r.ToolNames(); len(got) != 1 || got[0] != "read_files" {
		t.Errorf("got tools %v", got)
	}
}
