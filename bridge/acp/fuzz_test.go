package acp_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// Seed messages, from the real CLI's transcripts (contract TestACP*).
var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"audio":false,"embeddedContext":false}},"agentInfo":{"name":"cline","version":"3.0.65"},"authMethods":[{"id":"cline","name":"Sign in with Cline"}]}}`,
	`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"1796285397642_TvIS-_cli","models":{"availableModels":[{"modelId":"gpt-4o","name":"gpt-4o"}],"currentModelId":"gpt-4o"},"configOptions":[{"type":"boolean","id":"auto_approve","name":"Auto-approve tools","currentValue":false}]}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"1796285397642_TvIS-_cli","update":{"toolCallId":"call_fake_1_0","title":"editor: {\"path\":\"/w/x\"}","kind":"edit","status":"pending","rawInput":{"path":"/w/x","new_text":"x"},"sessionUpdate":"tool_call_update"}}}`,
	`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"1796285397642_TvIS-_cli","toolCall":{"toolCallId":"call_fake_1_0","title":"run_commands: git commit -m x","kind":"execute","status":"pending","rawInput":{"commands":["git commit -m x"]}},"options":[{"optionId":"allow_once","name":"Allow once","kind":"allow_once"},{"optionId":"reject_once","name":"Reject","kind":"reject_once"}]}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"1796285397642_TvIS-_cli","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_fake_1_0","status":"failed","rawOutput":"{\"error\":\"User rejected the tool call\"}"}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"1796285397642_TvIS-_cli","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Noted, I wi"}}}}`,
	`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`,
	`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error: Rate limit reached","data":{"message":"Rate limit reached"}}}`,
}

// FuzzStream feeds the engine arbitrary agent output: NUL-separated segments, each written after
// the engine's next message or 5 ms of quiet (so answers can match requests), then EOF. Initialize,
// session/new, a prompt and a model change run against it. Whatever it is, nothing may panic and
// everything must end: the engine's own deadlines (400 ms for the calls, 50 ms graces) bound it.
// Short deadlines keep each input well under a second, so a worker is rarely still in one when
// -fuzztime ends (Go 1.26's coordinator may then report a bare deadline: see make fuzz).
func FuzzStream(f *testing.F) {
	f.Add([]byte(strings.Join(fuzzSeeds[:2], "\x00") + "\x00" + strings.Join(fuzzSeeds[2:], "\n")))
	f.Add([]byte(strings.Join(fuzzSeeds, "\x00")))
	f.Add([]byte(fuzzSeeds[0] + "\x00" + fuzzSeeds[1] + "\x00" + fuzzSeeds[3] + "\x00\x00" + fuzzSeeds[7]))
	f.Add([]byte("garbage\n{\x00{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		segs := bytes.Split(data, []byte{0})
		cr, cw := io.Pipe()
		ar, aw := io.Pipe()
		defer func() { _ = cr.Close(); _ = aw.Close() }()
		lines := make(chan struct{}, 64)
		go func() { // what the engine writes: a tick per line, then drained
			sc := bufio.NewScanner(cr)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				select {
				case lines <- struct{}{}:
				default:
				}
			}
		}()
		go func() { // the agent: the next segment after each engine line, or after 5 ms of quiet
			defer aw.Close()
			for _, seg := range segs {
				select {
				case <-lines:
				case <-time.After(5 * time.Millisecond):
				}
				if _, err := aw.Write(append(seg, '\n')); err != nil {
					return
				}
			}
		}()
		conn := acp.New(cw, ar, acp.Options{CancelGrace: 50 * time.Millisecond, CloseGrace: 50 * time.Millisecond})
		done := make(chan struct{})
		go func() {
			defer close(done)
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			defer cancel()
			if _, err := conn.Initialize(ctx); err != nil {
				return
			}
			s, err := conn.NewSession(ctx, "/w", acp.Edits())
			if err != nil {
				return
			}
			turn, err := s.Prompt(ctx, "go", func(cline.Event) {})
			_ = acp.Classify(turn, err, cline.Outcome{})
			_ = s.SetModel(ctx, "m")
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the engine hung on this stream")
		}
		_ = conn.Close()
	})
}
