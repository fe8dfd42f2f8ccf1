//go:build e2e

package docker

import (
	"context"
	"os"
	"testing"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// TestSweepNetworks: the egress networks of dead instances on this host go at start-up, those of
// live instances and other hosts stay; RemoveOwn takes the executor's own.
func TestSweepNetworks(t *testing.T) {
	e := newTestExecutor(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		instance string
		sweep    bool // removed by Sweep
	}{
		{"dead", proc.Instance{Host: host, PID: 99999999, Start: 12345}.String(), true},
		{"this instance", e.Instance(), false},
		{"other host", proc.Instance{Host: "elsewhere", PID: 99999999, Start: 12345}.String(), false},
	}
	ids := make([]string, len(tests))
	for i, tt := range tests {
		res, err := rawCli.NetworkCreate(t.Context(), "cline-mcp-test-sweep-"+t.Name()+"-"+[]string{"a", "b", "c"}[i], client.NetworkCreateOptions{
			Driver: "bridge", Internal: true,
			Labels: map[string]string{LabelInstance: tt.instance, LabelEgress: "network", testLabel: t.Name()},
		})
		if err != nil {
			t.Fatalf("create %s: %v", tt.name, err)
		}
		ids[i] = res.ID
		t.Cleanup(func() { _, _ = rawCli.NetworkRemove(context.Background(), res.ID, client.NetworkRemoveOptions{}) })
	}
	gone := func(id string) bool {
		_, err := rawCli.NetworkInspect(t.Context(), id, client.NetworkInspectOptions{})
		return isNotFound(err)
	}
	if _, err := e.Sweep(t.Context()); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	for i, tt := range tests {
		if got := gone(ids[i]); got != tt.sweep {
			t.Errorf("after Sweep, %s: got gone=%v, want %v", tt.name, got, tt.sweep)
		}
	}
	if _, err := e.RemoveOwn(t.Context()); err != nil {
		t.Fatalf("RemoveOwn: %v", err)
	}
	if !gone(ids[1]) || gone(ids[2]) {
		t.Errorf("after RemoveOwn: own gone=%v, other host's gone=%v, want true, false", gone(ids[1]), gone(ids[2]))
	}
}
