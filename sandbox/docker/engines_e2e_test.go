//go:build e2e

package docker

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/testengine"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// privateEngine starts an engine of this machine (testengine) with the probe image loaded, and
// stops it when the test ends. Without the prerequisites it skips loudly, or fails under CI=true.
func privateEngine(t *testing.T, start func(context.Context) (*testengine.Engine, error)) *testengine.Engine {
	t.Helper()
	requireEngine(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	eng, err := start(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the private engine does not start: %v", err)
		}
		t.Skipf("!!! SKIPPED: the private engine does not start here: %v", err)
	}
	t.Cleanup(func() {
		if err := eng.Stop(); err != nil {
			t.Errorf("stop %s: %v", eng.Name, err)
		}
	})
	if err := eng.LoadImage(ctx, testImage); err != nil {
		t.Fatal(err)
	}
	return eng
}

// TestSecondEngineCopyMode: a dockerd that cannot see this machine's /tmp. The probe must say
// so, and copy mode must bring the run's changes back exactly, with nothing left on the engine.
func TestSecondEngineCopyMode(t *testing.T) {
	eng := privateEngine(t, testengine.StartDockerd)
	e := newTestExecutor(t, WithEndpoint(engine.Endpoint{Host: eng.Host, Source: "test"}), WithNetwork("none"), WithInstanceID("second-"+t.Name()))
	m, why, err := e.decideMounts(t.Context())
	if err != nil || m != MountsCopy {
		t.Fatalf("got %q (%s) %v, want copy: the engine's /tmp is its own", m, why, err)
	}
	t.Logf("probe: %s", why)
	t.Run("round trip", func(t *testing.T) { testCopyRoundTrip(t, e) })
	t.Run("special file refused", func(t *testing.T) { testCopyRefusesSpecialFiles(t, e) })
	t.Logf("writable trees: %s", e.cache.overlayWhy)
	if left, err := eng.Leftovers(t.Context(), LabelRun); err != nil || len(left) > 0 {
		t.Errorf("left on the engine: %v %v", left, err)
	}
}
