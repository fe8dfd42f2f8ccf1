package run

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

var host, dock = sandbox.IsolationHost, sandbox.IsolationDocker

// TestRetryPolicy: the seed's policy on a default host ask_cline call, within the call's time — one
// retry after a backoff for transient provider errors and cline_updating when at least 5 s of
// timeoutSeconds are left; a timeout used the call's time and is not retried; nothing else is
// retried, and never more than two attempts. A retry ends at the call's deadline, not its own.
func TestRetryPolicy(t *testing.T) {
	missing := &sandbox.LaunchError{Op: "start", Missing: true, Err: errors.New("exec: no such file")}
	cases := []struct {
		name    string
		timeout int
		steps   func(t *testing.T) []step
		path    error // ClinePath's error on the first attempt
		want    result
		events  []string
		message string
		warning string        // a warning the result must carry
		took    time.Duration // when set: the call's duration in the bubble's time
	}{
		{name: "ok first time", steps: func(t *testing.T) []step { return []step{pong(t)} },
			want:   result{ok: true, attempts: 1, isolation: []sandbox.Isolation{host}},
			events: []string{"settings.Begin", "host.Run", "hold.End"}},
		{name: "transient then ok", steps: func(t *testing.T) []step { return []step{rateLimited(t), pong(t)} },
			want:   result{ok: true, attempts: 2, isolation: []sandbox.Isolation{host, host}},
			events: []string{"settings.Begin", "host.Run", "backoff", "host.Run", "hold.End"}},
		{name: "503 then ok", steps: func(t *testing.T) []step { return []step{recorded(t, "d_http_503"), pong(t)} },
			want:   result{ok: true, attempts: 2, isolation: []sandbox.Isolation{host, host}},
			events: []string{"settings.Begin", "host.Run", "backoff", "host.Run", "hold.End"}},
		{name: "transient twice: two attempts only", steps: func(t *testing.T) []step { return []step{rateLimited(t), rateLimited(t)} },
			want:    result{kind: "transient_provider_error", attempts: 2, isolation: []sandbox.Isolation{host, host}, retryable: true},
			events:  []string{"settings.Begin", "host.Run", "backoff", "host.Run", "hold.End"},
			message: "Rate limit reached"},
		{name: "executable missing at start is cline_updating", steps: func(t *testing.T) []step { return []step{{err: missing}, pong(t)} },
			want:   result{ok: true, attempts: 2, isolation: []sandbox.Isolation{host, host}},
			events: []string{"settings.Begin", "host.Run", "backoff", "host.Run", "hold.End"}},
		{name: "dangling cline on PATH is cline_updating", path: &notFoundError{what: "cline", updating: true, err: errors.New("no such file")},
			steps:  func(t *testing.T) []step { return []step{pong(t)} },
			want:   result{ok: true, attempts: 2, isolation: []sandbox.Isolation{host, host}},
			events: []string{"settings.Begin", "backoff", "host.Run", "hold.End"}},
		{name: "cline_updating twice", steps: func(t *testing.T) []step { return []step{{err: missing}, {err: missing}} },
			want:    result{kind: "cline_updating", attempts: 2, isolation: []sandbox.Isolation{host, host}, retryable: true},
			events:  []string{"settings.Begin", "host.Run", "backoff", "host.Run", "hold.End"},
			message: "being updated"},
		{name: "cline not installed is not retried", path: &notFoundError{what: "cline", err: errors.New("not found")},
			steps:   func(t *testing.T) []step { return nil },
			want:    result{kind: "launch_failed", attempts: 1, isolation: []sandbox.Isolation{host}},
			events:  []string{"settings.Begin", "hold.End"},
			message: "npm install -g cline"},
		{name: "other launch failure is not retried",
			steps: func(t *testing.T) []step {
				return []step{{err: &sandbox.LaunchError{Op: "start", Err: errors.New("permission denied")}}}
			},
			want:    result{kind: "launch_failed", attempts: 1, isolation: []sandbox.Isolation{host}},
			events:  []string{"settings.Begin", "host.Run", "hold.End"},
			message: "permission denied"},
		{name: "auth error is not retried", steps: func(t *testing.T) []step { return []step{recorded(t, "e_http_401")} },
			want:    result{kind: "non_zero_exit", attempts: 1, isolation: []sandbox.Isolation{host}},
			events:  []string{"settings.Begin", "host.Run", "hold.End"},
			message: "Incorrect API key"},
		{name: "killed by a signal is not retried", steps: func(t *testing.T) []step { return []step{recorded(t, "f_hang_timeout_5s")} },
			want:    result{kind: "non_zero_exit", attempts: 1, isolation: []sandbox.Isolation{host}},
			events:  []string{"settings.Begin", "host.Run", "hold.End"},
			message: "SIGKILL"},
		{name: "a timeout used the call's time: not retried", timeout: 120, steps: func(t *testing.T) []step { return []step{hang(t)} },
			want:    result{kind: "timeout", attempts: 1, isolation: []sandbox.Isolation{host}, retryable: true},
			events:  []string{"settings.Begin", "host.Run", "backoff", "hold.End"}, // the pause is chosen, not waited
			message: "within the 120 s limit", warning: "not retried: 0.0 s of the call's 120 s"},
		{name: "transient then timeout: the retry ends at the call's deadline", timeout: 30,
			steps:   func(t *testing.T) []step { return []step{rateLimited(t), hang(t)} },
			want:    result{kind: "timeout", attempts: 2, isolation: []sandbox.Isolation{host, host}, retryable: true},
			events:  []string{"settings.Begin", "host.Run", "backoff", "host.Run", "hold.End"},
			message: "within the 30 s limit", warning: "attempt 2 was killed (SIGKILL)", took: 30 * time.Second},
		{name: "transient with too little time left: not retried", timeout: 30,
			steps: func(t *testing.T) []step {
				late := rateLimited(t)
				late.before = func(context.Context) { time.Sleep(27 * time.Second) }
				return []step{late}
			},
			want:    result{kind: "transient_provider_error", attempts: 1, isolation: []sandbox.Isolation{host}, retryable: true},
			events:  []string{"settings.Begin", "host.Run", "backoff", "hold.End"},
			message: "Rate limit reached", warning: "not retried: 1.0 s of the call's 30 s (timeoutSeconds) would be left after the backoff, and a retry needs 5 s"},
		{name: "timeout over 120 s is not retried", timeout: 121, steps: func(t *testing.T) []step { return []step{hang(t)} },
			want:    result{kind: "timeout", attempts: 1, isolation: []sandbox.Isolation{host}, retryable: true},
			events:  []string{"settings.Begin", "host.Run", "hold.End"},
			message: "within the 121 s limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				h := newHarness(t, tc.steps(t)...)
				if tc.path != nil {
					first := true
					next := h.cfg.ClinePath
					h.cfg.ClinePath = func() (string, error) {
						if first {
							first = false
							return "", tc.path
						}
						return next()
					}
				}
				c := h.call(AskCline)
				if tc.timeout != 0 {
					c.TimeoutSeconds = tc.timeout
				}
				res := h.do(t.Context(), c)
				wantResult(t, res, tc.want)
				wantEvents(t, h, tc.events...)
				wantContains(t, "message", res.Message, tc.message)
				if tc.want.ok && res.Text != "PONG" {
					t.Errorf("text %q, want PONG", res.Text)
				}
				wantWarning(t, res, "begin warning")
				if tc.warning != "" {
					wantWarning(t, res, tc.warning)
				}
				if tc.took != 0 && time.Duration(res.Duration*float64(time.Second)) != tc.took {
					t.Errorf("the call took %.3f s of the bubble's time, want %v: the deadline covers both attempts", res.Duration, tc.took)
				}
				retried := tc.want.attempts == 2
				sawRetry := false
				for _, p := range h.progressed() {
					sawRetry = sawRetry || strings.Contains(p, "retrying in 2.0 s")
				}
				if sawRetry != retried {
					t.Errorf("progress said retrying: %v, want %v (%q)", sawRetry, retried, h.progressed())
				}
			})
		})
	}
}

// TestResultCarriesTheLastAttempt: a successful retry reports the answer, model, usage and exit
// code of the second attempt, and a failed one its tails.
func TestResultCarriesTheLastAttempt(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t, rateLimited(t), pong(t))
		res := h.do(t.Context(), h.call(AskCline))
		if res.Model != "fake-model" || res.Usage == nil || res.Usage.InputTokens != 1234 {
			t.Errorf("model %q usage %+v, want fake-model and 1234 input tokens", res.Model, res.Usage)
		}
		if res.ExitCode == nil || *res.ExitCode != 0 || res.Signal != nil {
			t.Errorf("exit code %v signal %v, want 0 and none", res.ExitCode, res.Signal)
		}
		if res.StdoutTail == "" || strings.Contains(res.StdoutTail, "Rate limit") {
			t.Errorf("stdout tail is not the second attempt's: %q", res.StdoutTail)
		}

		h = newHarness(t, hang(t))
		c := h.call(AskCline)
		c.TimeoutSeconds = 300
		res = h.do(t.Context(), c)
		if res.ExitCode != nil || res.Signal == nil || *res.Signal != "SIGKILL" {
			t.Errorf("timed-out run: exit code %v signal %v, want none and SIGKILL", res.ExitCode, res.Signal)
		}
		wantContains(t, "stdout tail", res.StdoutTail, "iteration_start")
	})
}

// TestRetryProgressNamesTheAttempt: progress of the second attempt is prefixed with its number.
func TestRetryProgressNamesTheAttempt(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		h := newHarness(t, rateLimited(t), pong(t))
		h.do(t.Context(), h.call(AskCline))
		var starts, second int
		for _, p := range h.progressed() {
			if strings.HasPrefix(p, "attempt ") && strings.Contains(p, "starting Cline (host)") {
				starts++
			}
			if strings.HasPrefix(p, "attempt 2: ") && !strings.Contains(p, "starting") {
				second++
			}
		}
		if starts != 2 || second == 0 {
			t.Errorf("progress %q: want two starts and events of attempt 2", h.progressed())
		}
	})
}
