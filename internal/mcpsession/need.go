package mcpsession

import (
	"os"
	"testing"
)

// NeedDocker skips the test loudly when no Docker engine answers, and fails it under CI=true
// (a CI job that cannot reach Docker must not pass by skipping).
func NeedDocker(t testing.TB) {
	t.Helper()
	err := DockerAvailable()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and no Docker engine answers: %v", err)
	}
	t.Skipf("!!! SKIPPED: no Docker engine: %v", err)
}
