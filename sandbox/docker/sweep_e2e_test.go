//go:build e2e

package docker

import (
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

func TestSweep(t *testing.T) {
	e := newTestExecutor(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// The parent (go test) outlives this test on every OS; pid 1 does not exist on Windows.
	live := os.Getppid()
	liveStart, err := proc.StartTime(live)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		instance string
		wantGone bool
	}{
		{"dead pid on this host", proc.Instance{Host: host, PID: 99999999, Start: 12345}.String(), true},
		{"reused pid (start time differs)", proc.Instance{Host: host, PID: live, Start: liveStart + 1}.String(), true},
		{"this instance", e.Instance(), false},
		{"live other instance (the parent)", proc.Instance{Host: host, PID: live, Start: liveStart}.String(), false},
		{"other host", proc.Instance{Host: "elsewhere", PID: 99999999, Start: 12345}.String(), false},
		{"unparsable", "garbage", false},
	}
	ids := make([]string, len(tests))
	for i, tt := range tests {
		res, err := rawCli.ContainerCreate(t.Context(), client.ContainerCreateOptions{
			Config: &container.Config{
				Image:      testImage,
				Entrypoint: []string{probePath},
				Cmd:        []string{"sleep", "1h"},
				Labels:     map[string]string{LabelInstance: tt.instance, testLabel: t.Name()},
			},
		})
		if err != nil {
			t.Fatalf("create %s: %v", tt.name, err)
		}
		ids[i] = res.ID
		t.Cleanup(func() {
			_, _ = rawCli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
		})
	}
	// One of them running, as a leftover of a crashed server would be.
	// A server started by another test package may sweep it first; it is meant to go anyway.
	if _, err := rawCli.ContainerStart(t.Context(), ids[0], client.ContainerStartOptions{}); err != nil && !isNotFound(err) && !cerrdefs.IsConflict(err) {
		t.Fatalf("start: %v", err)
	}

	removed, err := e.Sweep(t.Context())
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	// Other test packages start servers whose start-up sweep may remove the dead instances'
	// containers first, so the count can be lower; what must hold is which ones are gone.
	if removed > 2 {
		t.Errorf("got %d removed, want at most 2", removed)
	}
	for i, tt := range tests {
		// Another sweeper's removal may still be in progress (Sweep then skips the conflict):
		// what must go is gone within a few seconds; what must stay is there after them.
		var err error
		gone := false
		for deadline := time.Now().Add(10 * time.Second); ; {
			_, err = rawCli.ContainerInspect(t.Context(), ids[i], client.ContainerInspectOptions{})
			if gone = isNotFound(err); gone || !tt.wantGone || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if gone != tt.wantGone {
			t.Errorf("%s: got gone=%v (%v), want %v", tt.name, gone, err, tt.wantGone)
		}
	}
}

func TestOOMKilled(t *testing.T) {
	e := newTestExecutor(t, WithMemory(32<<20))
	spec, out, errOut := probeSpec(t, "out", "marker", "alloc", "512")
	x, err := e.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !x.OOMKilled || x.Signal != "SIGKILL" || x.Code != 137 {
		t.Fatalf("got %+v stdout %q, want OOMKilled SIGKILL 137", x, out.String())
	}
	want := fmt.Sprintf("exceeded its memory limit (%d MiB)", 32)
	if got := errOut.String(); !strings.Contains(got, want) {
		t.Errorf("got stderr %q, want it to say %q", got, want)
	}
}
