package docker

import (
	"context"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

func TestIdentityAndCreateOptionsPerEngine(t *testing.T) {
	caller := runUser{1000, 1000}
	tests := []struct {
		name       string
		f          engine.Kind
		wantUser   string
		wantUserns string
		wantHome   string
	}{
		{"rootful docker", engine.Kind{}, "1000:1000", "", "uid=1000,gid=1000"},
		{"rootless docker", engine.Kind{Rootless: true}, "0:0", "", "uid=0,gid=0"},
		{"rootful podman", engine.Kind{Podman: true}, "1000:1000", "", "mode=0700,U"},
		{"rootless podman", engine.Kind{Podman: true, Rootless: true}, "1000:1000", "keep-id", "mode=0700,U"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFakeExecutor(t, newFake())
			plan := runPlan{id: identityFor(tt.f, caller)}
			opts, err := e.createOptions(sandbox.Spec{Path: "/usr/local/bin/cline", Tmpfs: []sandbox.Tmpfs{{Target: "/home/cline"}}}, "run", &plan)
			if err != nil {
				t.Fatal(err)
			}
			if opts.Config.User != tt.wantUser || string(opts.HostConfig.UsernsMode) != tt.wantUserns {
				t.Errorf("got user %s userns %q, want %s %q", opts.Config.User, opts.HostConfig.UsernsMode, tt.wantUser, tt.wantUserns)
			}
			if home := opts.HostConfig.Tmpfs["/home/cline"]; !strings.Contains(home, tt.wantHome) {
				t.Errorf("got HOME tmpfs %q, want it owned by %s", home, tt.wantHome)
			}
		})
	}
}

// TestFlavourAskedOnce: the engine is asked what it is once per executor, and Run uses the
// answer: a rootless Docker engine runs the container as uid 0.
func TestFlavourAskedOnce(t *testing.T) {
	f := newFake()
	e := newFakeExecutor(t, f)
	e.cli = rootlessFake{f}
	for range 2 {
		if got := e.flavour(t.Context()); !got.Rootless {
			t.Fatalf("got %+v, want rootless", got)
		}
	}
	if _, err := e.Run(t.Context(), sandbox.Spec{Path: "/bin/x"}); err != nil {
		t.Fatal(err)
	}
	if f.created.Config.User != "0:0" {
		t.Errorf("got user %s on rootless Docker, want 0:0", f.created.Config.User)
	}
}

// rootlessFake answers like rootless Docker, and panics when asked twice.
type rootlessFake struct{ *fakeClient }

func (r rootlessFake) Info(ctx context.Context, o client.InfoOptions) (client.SystemInfoResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if c == "info" {
			panic("info asked twice")
		}
	}
	r.calls = append(r.calls, "info")
	return client.SystemInfoResult{Info: system.Info{SecurityOptions: []string{"name=seccomp,profile=default", "name=rootless"}}}, nil
}
