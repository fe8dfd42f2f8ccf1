//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestACPMatrix: the ACP engine on the host and in a container (the fake image, `--network none`):
// a conversation continues with its sessionId (a Docker session in its kept container),
// the container session's CLI data lives in its own directory under --sessions-dir, an analysis
// edit is rejected before it runs, and the world's leak check (processes, containers, copies)
// holds.
func TestACPMatrix(t *testing.T) {
	for _, iso := range isolations {
		t.Run(iso, func(t *testing.T) {
			sessions := filepath.Join(t.TempDir(), "sessions")
			w := newWorld(t, iso, worldOpts{args: []string{"--cline-protocol", "acp", "--sessions-dir", sessions}})
			_, first := w.call("ask_cline", map[string]any{"prompt": "remember this fake:history"})
			wantOK(t, first)
			id, _ := first["sessionId"].(string)
			if id == "" || first["isolation"] != iso {
				t.Fatalf("first: %v", first)
			}
			_, second := w.call("ask_cline", map[string]any{"prompt": "fake:history", "sessionId": id})
			wantOK(t, second)
			if got, _ := second["text"].(string); !strings.HasPrefix(got, "earlier=1 first=remember this") {
				t.Errorf("the second turn did not see the first: %q", got)
			}
			if iso == docker {
				data, _ := filepath.Glob(filepath.Join(sessions, "data", "*", "sessions", id))
				if len(data) != 1 {
					t.Errorf("the container session's CLI data is not in its own dir under --sessions-dir: %v", data)
				}
			}
			_, edit := w.call("ask_cline", map[string]any{"prompt": "fake:edit?path=hello.txt"})
			wantOK(t, edit)
			if _, err := os.Stat(filepath.Join(w.work, "hello.txt")); !os.IsNotExist(err) {
				t.Errorf("an analysis edit was written: %v", err)
			}
			if rej, _ := edit["rejectedToolCalls"].([]any); len(rej) != 1 {
				t.Errorf("rejectedToolCalls %v, want the editor call", edit["rejectedToolCalls"])
			}
		})
	}
}
