//go:build contract && linux

package contract

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/sandbox/egress"
)

// TestSpareWarmedKeyless: with the real CLI in the real image, key-less (the default egress), a
// spare started after a conversation's first turn goes through the CLI's request path before
// its claim, and nothing of that reaches the provider or the next call: the warm-up's session is
// in the spare's data dir (the marker that it ran), the provider saw one request per call, each
// with the saved key (added by the proxy after the claim re-armed the grant), the claiming
// call's request holds its own prompt only, and its result names no refusal.
func TestSpareWarmedKeyless(t *testing.T) {
	spareWarmed(t, newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), throughEgressProxy(), acpArgs("--docker-warm", "1")), true)
}

// TestSpareWarmedKeyInside: the same with the key inside the container (--docker-egress open):
// the spare's warm-up turn ran with its settings pointed where nothing listens, so the provider
// saw one request per call; the claiming call's session read the settings the host put back
// (its request reached the provider, with the saved key, holding its own prompt only).
func TestSpareWarmedKeyInside(t *testing.T) {
	spareWarmed(t, newWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")), inDocker(), acpArgs("--docker-warm", "1")), false)
}

func spareWarmed(t *testing.T, w *world, keyless bool) {
	sessions := filepath.Join(w.home, ".cache", "cline-mcp", "sessions")
	res, sc := w.call("ask_cline", map[string]any{"prompt": "Reply with the word PONG"})
	mcpsession.WantOK(t, res, sc)
	first := mcpsession.Str(sc, "sessionId")
	var warmed string
	if !mcpsession.Eventually(90*time.Second, func() bool { warmed = warmUpSession(t, sessions); return warmed != "" }) {
		t.Fatalf("no spare was warmed up within 90 s; session files: %v", sessionFiles(sessions))
	}
	time.Sleep(2 * time.Second) // the warm-up's session is written before its grant is settled
	res, sc = w.call("ask_cline", map[string]any{"prompt": "Say the word PONG again"})
	mcpsession.WantOK(t, res, sc)
	second := mcpsession.Str(sc, "sessionId")
	if second == "" || second == first {
		t.Fatalf("second conversation's session %q (first %q)", second, first)
	}
	if own := filepath.Join(filepath.Dir(warmed), second); !exists(own) {
		t.Errorf("the second conversation did not run in the warmed spare: its session is not beside the warm-up's (%s); files: %v", own, sessionFiles(sessions))
	}
	chats := w.chats(-1)
	if len(chats) != 2 {
		t.Fatalf("the provider saw %d chat requests, want one per call (the warm-up never reaches it)", len(chats))
	}
	for i, c := range chats {
		if got := c.Header.Get("Authorization"); got != "Bearer sk-test-123" {
			t.Errorf("request %d carried Authorization %q, want the saved key", i+1, got)
		}
	}
	var users []string
	for _, m := range chats[1].Messages() {
		if m[0] == "user" {
			users = append(users, m[1])
		}
	}
	if len(users) != 1 || !strings.Contains(users[0], "Say the word PONG again") || strings.Contains(users[0], "warm-up") {
		t.Errorf("the claiming call's request has user messages %q, want its own prompt alone", users)
	}
	// The CLI's telemetry is refused on every call; the warm-up's refused request is not the call's.
	if enf, _ := sc["enforcement"].(map[string]any); enf["credentialOutside"] != keyless || strings.Contains(fmt.Sprint(enf["refusedEndpoints"]), egress.ProviderHost) {
		t.Errorf("enforcement %v, want credentialOutside %v and no refusal of the warm-up", enf, keyless)
	}
	ws, _ := sc["warnings"].([]any)
	ws = slices.DeleteFunc(ws, func(w any) bool { // what an open network always says
		return !keyless && strings.Contains(fmt.Sprint(w), "--docker-egress open")
	})
	if len(ws) > 0 {
		t.Errorf("got warnings %v, want none", ws)
	}
}

// warmUpSession is the directory of a session whose messages hold the warm-up's prompt, or "".
func warmUpSession(t *testing.T, root string) string {
	found := ""
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") || found != "" {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "cline-mcp warm-up") {
			found = filepath.Dir(p)
		}
		return nil
	})
	return found
}

// sessionFiles lists the files under root (for a failure's message).
func sessionFiles(root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, root))
		}
		return nil
	})
	return out
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
