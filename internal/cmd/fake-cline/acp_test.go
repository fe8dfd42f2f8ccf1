package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestACPAnswersLikeTheRealCLI: fake-cline --acp answers initialize, session/new (no key: -32000)
// and an unknown method with the real CLI's messages (docs/acp.md §2, §1, §3), -P/-m/--data-dir are
// ignored, stdout carries only JSON-RPC, and the process ends when stdin ends.
func TestACPAnswersLikeTheRealCLI(t *testing.T) {
	home := t.TempDir()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"` + home + `","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}`,
	}, "\n") + "\n"
	r := runFake(t, invocation{args: []string{"--acp", "-P", "anthropic", "-m", "x", "--data-dir", "elsewhere"}, stdin: strings.NewReader(in),
		env: []string{"HOME=" + home, "CLINE_PROVIDER=openai-compatible", "FAKE_CLINE_ACP_EOF_MS=1"}})
	if r.code != 0 || !strings.HasPrefix(r.stderr, "[acp] starting ACP mode over stdio") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d stdout lines, want 3:\n%s", len(lines), r.stdout)
	}
	want := map[string]string{
		"1": `{"jsonrpc":"2.0","id":1,"result":` + initializeResult + `}`,
		"2": `{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Authentication required: Call authenticate before starting a session"}}`,
		"3": `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"\"Method not found\": session/list"}}`,
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", l)
		}
		id, _ := json.Marshal(m["id"])
		var w map[string]any
		_ = json.Unmarshal([]byte(want[string(id)]), &w)
		if !reflect.DeepEqual(m, w) {
			t.Errorf("got %s\nwant %s", l, want[string(id)])
		}
	}
	if _, err := os.Stat(filepath.Join(home, "elsewhere")); err == nil {
		t.Error("--data-dir was honoured; ACP mode ignores it")
	}
}
