package run

import (
	"errors"
	"testing"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// TestLaunchVerdict: only a CLI vanishing from the host (an npm update replacing it) is worth a
// retry as cline_updating; inside an image nothing changes between attempts, so a missing
// executable there (a wrong --docker-cline) or a missing image is launch_failed.
func TestLaunchVerdict(t *testing.T) {
	missingOnHost := &sandbox.LaunchError{Op: "start", Missing: true, Err: errors.New("exec: no such file")}
	missingInImage := &sandbox.LaunchError{Op: "docker stat", Missing: true, Hint: "--docker-cline", Err: errors.New("executable /x not found in image i")}
	missingImage := &sandbox.LaunchError{Op: "image inspect", Missing: true, Err: errors.New("image i not found")}
	for _, tc := range []struct {
		name string
		err  error
		iso  sandbox.Isolation
		kind cline.Kind
	}{
		{"host: executable vanished", missingOnHost, sandbox.IsolationHost, cline.KindClineUpdating},
		{"host: resolved but mid-update", &notFoundError{what: "cline", updating: true, err: errors.New("dangling")}, sandbox.IsolationHost, cline.KindClineUpdating},
		{"host: never installed", &notFoundError{what: "cline", err: errors.New("not on PATH")}, sandbox.IsolationHost, cline.KindLaunchFailed},
		{"docker: executable missing in the image", missingInImage, sandbox.IsolationDocker, cline.KindLaunchFailed},
		{"docker: image missing", missingImage, sandbox.IsolationDocker, cline.KindLaunchFailed},
		{"docker: engine down", &sandbox.LaunchError{Op: "docker ping", Err: errors.New("refused")}, sandbox.IsolationDocker, cline.KindLaunchFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := launchVerdict(tc.err, tc.iso)
			if v.Kind != tc.kind {
				t.Errorf("got kind %s (%q), want %s", v.Kind, v.Message, tc.kind)
			}
			if v.Transient != (tc.kind == cline.KindClineUpdating) {
				t.Errorf("got transient %v for kind %s", v.Transient, v.Kind)
			}
			if v.Kind == cline.KindLaunchFailed && v.Message != tc.err.Error() {
				t.Errorf("got message %q, want the error with its fix %q", v.Message, tc.err.Error())
			}
		})
	}
}
