package engine

import (
	"testing"
	"time"
)

// TestContainerKey: a container turn is kept only with a shape, and only for its own session:
// the key of another session, or of another shape, is another key; a host turn's key names no
// session (a warm host process serves any session of its class and directory).
func TestContainerKey(t *testing.T) {
	e := NewACP(2, time.Minute, nil)
	turn := Turn{KeepAs: "analysis", Dir: "/w", Container: true, SessionID: "s1", Shape: "a", Provider: Provider{ID: "p", Key: "k"}}
	if _, ok := e.key(Turn{KeepAs: "analysis", Dir: "/w", Container: true, SessionID: "s1"}); ok {
		t.Error("a container turn without a shape may be kept")
	}
	k1, ok := e.key(turn)
	if !ok || k1.session != "s1" || k1.shape != "a" {
		t.Fatalf("key %+v, %v", k1, ok)
	}
	other := turn
	other.SessionID = "s2"
	if k2, _ := e.key(other); k2 == k1 {
		t.Error("another session has the same key")
	}
	other = turn
	other.Shape = "b"
	if k2, _ := e.key(other); k2 == k1 {
		t.Error("another shape has the same key")
	}
	host := turn
	host.Container = false
	if k, ok := e.key(host); !ok || k.session != "" || k.shape != "" {
		t.Errorf("host key %+v, %v", k, ok)
	}
	if _, ok := NewACP(0, time.Minute, nil).key(turn); ok {
		t.Error("a server without warm agents keeps a container")
	}
}
