package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// stateDir is where cross-process invocation counters live: $FAKE_CLINE_STATE_DIR, else
// <dataDir>/fake-cline-state (so a container whose settings copy persists between attempts still
// counts).
func stateDir(dataDir string) string {
	if d := os.Getenv("FAKE_CLINE_STATE_DIR"); d != "" {
		return d
	}
	return filepath.Join(dataDir, "fake-cline-state")
}

var unsafeKey = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// nextAttempt returns this invocation's 1-based number for key. Each invocation claims the first
// free "<key>.<n>" with O_CREATE|O_EXCL, which is atomic across processes without locks.
func nextAttempt(dir, key string) (int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("state dir %s: %w", dir, err)
	}
	key = unsafeKey.ReplaceAllString(key, "_")
	for n := 1; n < 100000; n++ {
		f, err := os.OpenFile(filepath.Join(dir, key+"."+strconv.Itoa(n)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			_ = f.Close()
			return n, nil
		}
		if !os.IsExist(err) {
			return 0, fmt.Errorf("state claim %s: %w", key, err)
		}
	}
	return 0, fmt.Errorf("state %s: too many attempts", key)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}
