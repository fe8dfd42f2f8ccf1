package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/cline-mcp/cline-mcp/bridge/jobs"
)

// maxToolsList is the most bytes tools/list may take with every tool on: a client without tool
// search (or with alwaysLoad) puts all of it into the context of every conversation.
const maxToolsList = 16 << 10

// toolsList is the tools/list response of a server with every tool, as the wire carries it.
func toolsList(t *testing.T) []byte {
	t.Helper()
	s := New(Options{Runner: &countingRunner{}, Jobs: &jobs.Store{Dir: t.TempDir()}, Sessions: oneSession{}})
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	resp := s.mcp.HandleMessage(context.Background(), json.RawMessage(req))
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Result mcp.ListToolsResult `json:"result"`
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.Result.Tools) != 6 {
		t.Fatalf("tools/list: %d tools, %v: %s", len(got.Result.Tools), err, b)
	}
	return b
}

// TestToolsListSize: tools/list with all six tools stays within 16 KiB.
func TestToolsListSize(t *testing.T) {
	b := toolsList(t)
	var got struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for _, tool := range got.Result.Tools {
		var parts map[string]json.RawMessage
		_ = json.Unmarshal(tool, &parts)
		t.Logf("%s: %d bytes (inputSchema %d, outputSchema %d, description %d)", parts["name"], len(tool),
			len(parts["inputSchema"]), len(parts["outputSchema"]), len(parts["description"]))
	}
	t.Logf("tools/list: %d bytes", len(b))
	if len(b) > maxToolsList {
		t.Errorf("tools/list is %d bytes, more than %d", len(b), maxToolsList)
	}
}
