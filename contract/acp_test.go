//go:build contract && linux

package contract

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
)

// TestACPConversation re-observes docs/acp.md §1–§4 and §9 through the engine: initialize, a new session
// with the model set, two turns whose second request carries the first, the env key on the
// wire, usage in the manifest; then a new process loads the session (history replayed before the
// answer), continues it with the whole history, and an unknown id is a SessionNotFoundError.
func TestACPConversation(t *testing.T) {
	w := newACPWorld(t, fakeprovider.Script(
		fakeprovider.Text("Noted, I will remember it."),
		fakeprovider.Text("The code word was KIWI-7."),
		fakeprovider.Text("Still KIWI-7."),
	))
	t.Parallel()
	p := w.initialized(acp.Options{})
	s := w.session(p, acp.ReadOnly(false))
	turn, err := w.prompt(s, "First turn: remember the code word KIWI-7 please.")
	if err != nil || turn.StopReason != "end_turn" || turn.Text != "Noted, I will remember it." {
		t.Fatalf("turn 1: got %+v, %v", turn, err)
	}
	turn, err = w.prompt(s, "SECOND-TURN: which code word?")
	if v := acp.Classify(turn, err, cline.Outcome{}); !v.OK || v.Text != "The code word was KIWI-7." {
		t.Fatalf("turn 2: got %+v (%v)", v, err)
	}
	chats := w.prov.Chats()
	if len(chats) != 2 {
		t.Fatalf("the provider got %d chat requests, want 2", len(chats))
	}
	if got := chats[1].Header.Get("Authorization"); got != "Bearer "+acpKey {
		t.Errorf("got Authorization %q, want the env key", got)
	}
	if m, _ := chats[1].Body["model"].(string); m != "fake-model" {
		t.Errorf("got model %q, want fake-model (set_config_option)", m)
	}
	wantInHistory(t, chats[1], "First turn: remember", "Noted, I will remember it.", "SECOND-TURN")
	dataDir := filepath.Join(w.home, ".cline", "data")
	u, err := acp.ReadUsage(dataDir, s.ID())
	if err != nil || u.InputTokens <= 0 || u.OutputTokens <= 0 {
		t.Errorf("usage from the manifest: got %+v, %v", u, err)
	}
	logSessionDir(t, dataDir, s.ID())
	id := s.ID()
	p.stop(t)

	p2 := w.initialized(acp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p2.conn.LoadSession(ctx, "1700000000000_bogus", w.work, nil); !errors.As(err, new(*acp.SessionNotFoundError)) {
		t.Errorf("load of an unknown id: got %v, want a SessionNotFoundError", err)
	}
	s2, err := p2.conn.LoadSession(ctx, id, w.work, acp.ReadOnly(false))
	if err != nil {
		t.Fatalf("session/load in a new process: %v", err)
	}
	h := s2.History()
	if len(h) != 4 || h[0].Role != "user" || !strings.Contains(h[0].Text, "KIWI-7") || h[3].Text != "The code word was KIWI-7." {
		t.Errorf("got replayed history %+v, want the four messages", h)
	}
	if err := s2.SetModel(ctx, "fake-model-2"); err != nil {
		t.Fatal(err)
	}
	turn, err = w.prompt(s2, "THIRD: and now?")
	if err != nil || turn.Text != "Still KIWI-7." {
		t.Fatalf("turn 3 after load: got %+v, %v", turn, err)
	}
	last := w.prov.Chats()[2]
	wantInHistory(t, last, "First turn: remember", "Noted, I will remember it.", "SECOND-TURN", "The code word was KIWI-7.", "THIRD")
	if m, _ := last.Body["model"].(string); m != "fake-model-2" {
		t.Errorf("after load: got model %q, want fake-model-2", m)
	}
	p2.stop(t)
}

func wantInHistory(t *testing.T, r fakeprovider.Request, want ...string) {
	t.Helper()
	var all []string
	for _, m := range r.Messages() {
		all = append(all, m[0]+": "+m[1])
	}
	joined := strings.Join(all, "\n")
	pos := 0
	for _, w := range want {
		i := strings.Index(joined[pos:], w)
		if i < 0 {
			t.Errorf("the request lacks %q (in order) in its messages:\n%s", w, tail(joined, 3000))
			return
		}
		pos += i + len(w)
	}
}

// logSessionDir logs the files the CLI keeps for a session (for the facts in docs).
func logSessionDir(t *testing.T, dataDir, id string) {
	_ = filepath.WalkDir(filepath.Join(dataDir, "sessions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			fi, _ := d.Info()
			rel, _ := filepath.Rel(dataDir, p)
			t.Logf("session file: %s (%d bytes)", rel, fi.Size())
			if os.Getenv("CLINE_MCP_CONTRACT_WIRE") != "" {
				b, _ := os.ReadFile(p)
				t.Logf("%s:\n%s", rel, tail(string(b), 8000))
			}
		}
		return nil
	})
}
