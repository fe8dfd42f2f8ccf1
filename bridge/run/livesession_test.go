package run

import (
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/run/engine"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
)

// TestShapeOf: two turns of a session whose specs differ only in the call's own settings-copy dir
// (names of different lengths) have one shape; a narrower egress, another mount, another
// environment or another tmpfs is another shape, whose turn never takes the kept container.
func TestShapeOf(t *testing.T) {
	spec := func(copyDir string) sandbox.Spec {
		return sandbox.Spec{
			Path: "/usr/local/bin/cline", Args: []string{"--acp"}, Dir: "/work",
			Env: []string{"CLINE_DATA_DIR=/s/data/1", "CLINE_GLOBAL_SETTINGS_PATH=" + copyDir + "/settings/global-settings.json"},
			Mounts: []sandbox.Mount{
				{Source: "/work", Target: "/work", ReadOnly: true},
				{Source: copyDir, Target: copyDir},
				{Source: copyDir + "/settings", Target: "/s/data/1/settings"},
			},
			Tmpfs:  []sandbox.Tmpfs{{Target: "/tmp", SizeMB: 512}},
			Labels: map[string]string{"cline-mcp.tool": "ask_cline"},
			Egress: []string{"api.example.com:443"},
		}
	}
	a, b := spec("/tmp/cline-mcp-agent-1"), spec("/tmp/cline-mcp-agent-123456789")
	if shapeOf(a, "/tmp/cline-mcp-agent-1", "", "") != shapeOf(b, "/tmp/cline-mcp-agent-123456789", "", "") {
		t.Fatal("two turns that differ only in their settings-copy dir have different shapes")
	}
	base := shapeOf(a, "/tmp/cline-mcp-agent-1", "", "")
	none := []string{}
	changes := map[string]func(*sandbox.Spec){
		"allow only":  func(s *sandbox.Spec) { s.AllowOnly = &none },
		"egress":      func(s *sandbox.Spec) { s.Egress = nil },
		"mount":       func(s *sandbox.Spec) { s.Mounts[0].ReadOnly = false },
		"environment": func(s *sandbox.Spec) { s.Env = append(s.Env, "CLINE_API_KEY=other") },
		"tmpfs":       func(s *sandbox.Spec) { s.Tmpfs[0].SizeMB = 1 },
		"session":     func(s *sandbox.Spec) { s.Mounts[2].Target = "/s/data/2/settings" },
	}
	for name, change := range changes {
		s := spec("/tmp/cline-mcp-agent-1")
		change(&s)
		if shapeOf(s, "/tmp/cline-mcp-agent-1", "", "") == base {
			t.Errorf("another %s has the same shape", name)
		}
	}
}

// TestLiveLayout: a session's recorded repository layout is used only while a container is kept
// for it (none is here), and never for a call without a session.
func TestLiveLayout(t *testing.T) {
	r := &Runner{acp: engine.NewACP(2, time.Minute, nil)}
	r.layouts.put("s1", &git.Repo{Top: "/repo"})
	if _, ok := r.liveLayout("s1")(); ok {
		t.Error("a layout was used with no container kept for the session")
	}
	if _, ok := r.liveLayout("")(); ok {
		t.Error("a layout was used for a call without a session")
	}
	r.layouts.drop("s1")
	if _, ok := r.layouts.get("s1"); ok {
		t.Error("an expired session's layout is kept")
	}
}
