package engine

import (
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// TestMergeTurns: a steered turn's answer follows the earlier one's, and the counts add up.
func TestMergeTurns(t *testing.T) {
	a := acp.Turn{Text: "FIRST", Iterations: 2, Rejected: []acp.Rejection{{Tool: "editor"}},
		Tools: cline.Summary{ToolCalls: 1, Tools: []string{"read_files"}, Successes: []cline.ToolCount{{Name: "read_files", Count: 1}}}}
	b := acp.Turn{Text: "SECOND", Iterations: 1, StopReason: "end_turn", Rejected: []acp.Rejection{{Tool: "run_commands"}},
		Tools: cline.Summary{ToolCalls: 2, Tools: []string{"read_files", "editor"}, Successes: []cline.ToolCount{{Name: "read_files", Count: 1}, {Name: "editor", Count: 1}}}}
	m := mergeTurns(a, b, "also do this")
	if m.Text != "FIRST\n\n[steer message: also do this]\n\nSECOND" || m.Iterations != 3 || m.StopReason != "end_turn" || len(m.Rejected) != 2 {
		t.Errorf("merged %+v", m)
	}
	if m.Tools.ToolCalls != 3 || strings.Join(m.Tools.Tools, ",") != "read_files,editor" || m.Tools.Successes[0].Count != 2 || len(m.Tools.Successes) != 2 {
		t.Errorf("tools %+v", m.Tools)
	}
	if len(a.Tools.Successes) != 1 || a.Tools.Successes[0].Count != 1 {
		t.Errorf("the first turn was changed: %+v", a.Tools)
	}
}
