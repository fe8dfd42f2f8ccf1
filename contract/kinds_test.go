//go:build contract && linux

package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
)

// noWait makes the CLI's own retries immediate: it honours retry-after / retry-after-ms when
// they are below 60 s (docs/cline-cli.md "Exit codes and the CLI's own retries"), for 429 and — verified here — 5xx.
// Without it a failing provider costs about 62 s per attempt (2+4+8+16+32 s of backoff).
var noWait = map[string]string{"retry-after": "0", "retry-after-ms": "0"}

// TestProviderFailures maps the provider's behaviour through the real CLI's own retries to the
// server's kinds and attempt counts.
func TestProviderFailures(t *testing.T) {
	cases := []struct {
		name     string
		steps    []fakeprovider.Step
		timeout  int
		ok       bool
		kind     string
		attempts int
		chats    int    // requests the provider must see in all; 0 = do not check
		message  string // substring of the message (failure) or the text (success)
		max      time.Duration
	}{
		// The CLI's internal retry absorbs a single 429 (c_http_429_then_ok): the server sees
		// one completed attempt.
		{name: "429 once then ok", steps: []fakeprovider.Step{fakeprovider.Error(429, noWait), fakeprovider.Text("PONG")},
			ok: true, attempts: 1, chats: 2, message: "PONG"},
		// 6 tries inside each CLI run, and the server retries the transient failure once.
		{name: "429 persistent", steps: []fakeprovider.Step{fakeprovider.Error(429, noWait)},
			kind: "transient_provider_error", attempts: 2, chats: 12, message: "Rate limit"},
		{name: "503 persistent", steps: []fakeprovider.Step{fakeprovider.Error(503, noWait)},
			kind: "transient_provider_error", attempts: 2, chats: 12, message: "overloaded"},
		{name: "401 not retried", steps: []fakeprovider.Step{fakeprovider.Error(401, nil)},
			kind: "non_zero_exit", attempts: 1, chats: 1, message: "Incorrect API key"},
		// The local backend ignores -t and SIGTERM (docs/cline-cli.md "Backends, signals and stdio"): the server's own deadline
		// and SIGINT/SIGKILL end the run; timeoutSeconds is the call's, so a timeout is not retried. 15 s leaves the
		// CLI time to reach the model on a loaded 2-core machine (its start alone took up to
		// ~9 s there with the Docker half running alongside; 6 s was too short).
		{name: "hang times out", steps: []fakeprovider.Step{fakeprovider.Hang()}, timeout: 15,
			kind: "timeout", attempts: 1, message: "15 s", max: 90 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, fakeprovider.Script(c.steps...))
			args := map[string]any{"prompt": "Reply with the word PONG"}
			if c.timeout > 0 {
				args["timeoutSeconds"] = c.timeout
			}
			start := time.Now()
			res, sc := w.call("ask_cline", args)
			took := time.Since(start)
			if c.ok {
				mcpsession.WantOK(t, res, sc)
				if !strings.Contains(mcpsession.Str(sc, "text"), c.message) {
					t.Errorf("got text %q, want %q in it", mcpsession.Str(sc, "text"), c.message)
				}
			} else {
				mcpsession.WantKind(t, res, sc, c.kind)
				if !strings.Contains(mcpsession.Str(sc, "message"), c.message) {
					t.Errorf("got message %q, want %q in it", mcpsession.Str(sc, "message"), c.message)
				}
				wantRetryable := c.kind != "non_zero_exit"
				if sc["retryable"] != wantRetryable {
					t.Errorf("got retryable %v, want %v", sc["retryable"], wantRetryable)
				}
			}
			wantAttempts(t, sc, c.attempts)
			if c.chats > 0 {
				w.chats(c.chats)
			} else if len(w.chats(-1)) == 0 {
				t.Errorf("the provider saw no request: the CLI never got as far as the model call")
			}
			if c.max > 0 && took > c.max {
				t.Errorf("the call took %v, want under %v", took, c.max)
			}
			t.Logf("%s: %v, %d chat request(s)", c.name, took.Round(100*time.Millisecond), len(w.chats(-1)))
		})
	}
}
