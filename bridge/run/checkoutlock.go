package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// checkoutLockPoll is how often an apply waiting for another process's apply on its checkout
// tries the lock again.
const checkoutLockPoll = 100 * time.Millisecond

// lockCheckout takes the cross-process lock of one checkout (key: checkoutKey) in dir, so that
// apply_cline_edits calls of different cline-mcp processes on the same checkout run one at a time
// too. The lock file is dir/<sha256 of key>.lock (0600; dir is created 0700); the lock ends with
// the process that holds it, however it ends. busy is told once when another process holds it.
// It returns the release function, or ctx.Err() when ctx ends while waiting.
func lockCheckout(ctx context.Context, dir, key string, busy func()) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkout lock dir %s: %w", dir, err)
	}
	sum := sha256.Sum256([]byte(key))
	fl := flock.New(filepath.Join(dir, hex.EncodeToString(sum[:16])+".lock"), flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("checkout lock %s: %w", fl.Path(), err)
	}
	if !ok {
		busy()
		if ok, err = fl.TryLockContext(ctx, checkoutLockPoll); !ok || err != nil {
			_ = fl.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("checkout lock %s: %w", fl.Path(), err)
		}
	}
	return func() { _ = fl.Unlock() }, nil
}
