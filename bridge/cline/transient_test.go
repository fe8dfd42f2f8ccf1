package cline

import "testing"

func TestIsTransient(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"Rate limit reached for requests. Limit: 3 / min. Please try again in 20s.", true}, // c_http_429
		{"The server had an error while processing your request. Sorry about that!", true},  // d_http_500
		{"The engine is currently overloaded / temporarily unavailable, please try again later", true},
		{"Response stream ended without a finish reason.", true}, // f_hang_midstream_timeout_5s
		{"429 Too Many Requests", true},
		{"too many requests", true},
		{"rate_limit_exceeded", true},
		{"HTTP 503", true},
		{"HTTP/1.1 502 Bad Gateway", true},
		{"request failed with status 502", true},
		{"status code: 504", true},
		{"503 Service Unavailable", true},
		{"500 Internal Server Error", true},
		{"upstream connect error or disconnect/reset before headers", true},
		{"Provider returned error: upstream timeout", true},
		{"read ECONNRESET", true},
		{"connect ETIMEDOUT 10.0.0.1:443", true},
		{"socket hang up", true},
		{"getaddrinfo EAI_AGAIN api.example.com", true},
		{"Overloaded", true},
		{"service unavailable", true},

		{"", false},
		{"Incorrect API key provided: sk-test-***123.", false}, // e_http_401
		{"Cannot connect to API: Unable to connect. Is the computer able to access the url? (ConnectionRefused)", false},
		{"Cannot connect to API: Was there a typo in the url or port? (FailedToOpenSocket)", false},
		{"not found", false},
		{"500 files changed", false},
		{"found 503 matches in 12 files", false},
		{"rate limit remaining: 99", false},
		{"x-ratelimit-remaining: 99", false},
		{"x-ratelimit-limit-requests: 60, x-ratelimit-reset-requests: 1s", false},
		{"invalid model (rate-limit-remaining=12)", false},
		{"JSON output mode requires a prompt argument or piped stdin (interactive mode is unsupported)", false},
		{"run timed out after 5s", false},
		{"context length exceeded: 200000 tokens", false},
	}
	for _, tc := range tests {
		t.Run(tc.msg, func(t *testing.T) {
			if got := IsTransient(tc.msg); got != tc.want {
				t.Errorf("IsTransient(%q): got %v, want %v", tc.msg, got, tc.want)
			}
		})
	}
}
