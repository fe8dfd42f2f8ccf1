//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// afterDeadline reads how long after the call's deadline an attempt ended, from its warning.
var afterDeadline = regexp.MustCompile(`it had ended ([0-9.]+) s after the deadline`)

// TestDeadlineCoversTheCall: timeoutSeconds is the call's, retries included, and an agent that
// ignores session/cancel, the end of its stdin, SIGINT and SIGTERM is killed at the deadline, on
// the host and in a container. The first attempt fails with a transient error, so a retry starts
// (the stubborn agent's stderr line in the result is the marker that the second attempt ran and
// ignored everything); the result is a timeout of attempt 2 that says it was killed at the call's
// deadline, and no third attempt follows. Without the transient error the attempt that timed out
// is not retried: nothing of the call's time is left.
//
// The contract is what the result says (killed at the deadline, attempts, the warning), not a
// wall-clock bound: the measured return time past the deadline is logged, and the only time limit
// here is a hang guard far above it.
func TestDeadlineCoversTheCall(t *testing.T) {
	for _, iso := range isolations {
		t.Run(iso, func(t *testing.T) {
			t.Parallel() // a world each; most of the time is the calls' deadlines
			w := newWorld(t, iso, worldOpts{args: []string{"--cline-protocol", "acp", "--sessions-dir", t.TempDir()}})
			for _, tc := range []struct {
				name     string
				prompt   string
				timeout  int
				attempts int
				warning  string
			}{
				{"transient, then a stubborn retry", "fake:stubborn?fails=1&key=" + randHex(4), 15, 2, "attempt 2 was killed (SIGKILL)"},
				{"a stubborn first attempt", "fake:stubborn", 8, 1, "not retried: 0.0 s of the call's 8 s"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(tc.timeout)*time.Second+2*time.Minute) // hang guard
					defer cancel()
					start := time.Now()
					res, err := w.sess.CallErr(ctx, "ask_cline", w.args(map[string]any{"prompt": tc.prompt, "timeoutSeconds": tc.timeout}), nil)
					took := time.Since(start)
					if err != nil {
						t.Fatalf("the call did not return: %v", err)
					}
					sc := mcpsession.Structured(t, res)
					if !strings.Contains(mcpsession.Str(sc, "stderrTail"), "fake-cline stubborn: ignoring SIGINT, SIGTERM, session/cancel and stdin EOF") {
						t.Fatalf("the stubborn agent did not run (no marker): %v", sc)
					}
					if sc["kind"] != "timeout" || num(sc, "attempts") != tc.attempts || sc["signal"] != "SIGKILL" {
						t.Errorf("kind %v attempts %v signal %v, want timeout, %d, SIGKILL", sc["kind"], sc["attempts"], sc["signal"], tc.attempts)
					}
					if !warningsContain(sc, tc.warning) || !warningsContain(sc, "at the call's deadline (timeoutSeconds "+strconv.Itoa(tc.timeout)+")") {
						t.Errorf("warnings %v, want %q and the deadline's", sc["warnings"], tc.warning)
					}
					ended := "?"
					ws, _ := sc["warnings"].([]any)
					for _, x := range ws {
						if m := afterDeadline.FindStringSubmatch(fmt.Sprint(x)); m != nil {
							ended = m[1]
						}
					}
					t.Logf("%s, timeoutSeconds %d: returned after %.1f s (%.1f s past the deadline, counted from the request); the attempt ended %s s after the deadline",
						iso, tc.timeout, took.Seconds(), took.Seconds()-float64(tc.timeout), ended)
				})
			}
		})
	}
}
