package cline

import (
	"regexp"
	"strings"
)

// rateLimitInfo matches informational rate-limit fragments ("rate limit remaining: 99",
// "x-ratelimit-remaining-requests: 59", "ratelimit-reset: 1s") that say nothing about a failure.
// IsTransient removes them before it looks for failure patterns (seed: such stderr info messages
// are ignored).
var rateLimitInfo = regexp.MustCompile(`(?i)(x-)?rate[-_ ]?limit[-_ ]?(remaining|reset|limit)[-_a-z]*\s*[:=]?\s*[^\s,;)]*`)

// transientPatterns are failures worth one more attempt (seed: "transient_provider_error").
// A 5xx status counts only with HTTP context ("HTTP 503", "status 502", "503 Service
// Unavailable"), never a bare number ("500 files"). Decisions taken from the recordings:
//   - "The server had an error while processing your request" (d_http_500, OpenAI's 500 body)
//     and "overloaded / temporarily unavailable" (d_http_503) are transient.
//   - "Response stream ended without a finish reason." (f_hang_midstream_timeout_5s: the provider
//     cut the stream) is a connection reset in all but name: transient.
//   - Connection refused / FailedToOpenSocket (e_connection_refused, o_no_providers_json) is NOT
//     transient: the CLI already retried six times over ~62 s, and nothing listening at the
//     provider's URL is a configuration problem another ~62 s attempt will not fix.
var transientPatterns = []*regexp.Regexp{
	regexp.MustCompile(`\b429\b`),
	regexp.MustCompile(`rate[-_ ]?limit`),
	regexp.MustCompile(`too many requests`),
	regexp.MustCompile(`\b(https?|http/\d(\.\d)?|status|status code|statuscode|code)[\s:=/]*5\d\d\b`),
	regexp.MustCompile(`\b5\d\d[\s:-]+(internal server error|bad gateway|service unavailable|gateway time-?out|server error|overloaded)`),
	regexp.MustCompile(`internal server error|bad gateway|gateway time-?out|server had an error|\bserver_error\b`),
	regexp.MustCompile(`overloaded|temporarily unavailable|service unavailable|try again later`),
	regexp.MustCompile(`econnreset|etimedout|econnaborted|eai_again|connection reset|socket hang up|socket connection was closed unexpectedly`),
	regexp.MustCompile(`\bupstream\b`),
	regexp.MustCompile(`response stream ended without a finish reason`),
}

// IsTransient reports whether an extracted error message describes a failure worth one automatic
// retry: rate limits (429), provider 5xx with HTTP context, overload, resets and timeouts of the
// connection, upstream errors. Pass a single extracted message, never raw stderr.
func IsTransient(msg string) bool {
	m := strings.ToLower(rateLimitInfo.ReplaceAllString(msg, " "))
	for _, re := range transientPatterns {
		if re.MatchString(m) {
			return true
		}
	}
	return false
}

var (
	authPattern        = regexp.MustCompile(`(?i)\b(401|403)\b|unauthori[sz]ed|forbidden|(invalid|incorrect|missing) api key|api key (is )?(invalid|missing)|authentication`)
	unreachablePattern = regexp.MustCompile(`(?i)connectionrefused|econnrefused|connection refused|failedtoopensocket|unable to connect|enotfound|cannot connect to api`)
)

// hint returns a short remedy for well-known non-transient failures, with a leading space.
func hint(msg, class string) string {
	switch {
	case class == "auth" || authPattern.MatchString(msg):
		return " (authentication failed: check the provider's API key, e.g. with `cline auth`)"
	case class == "context_window_exceeded":
		return " (the conversation exceeds the model's context window: shorten the prompt or choose a model with a larger window)"
	case unreachablePattern.MatchString(msg):
		return " (the provider could not be reached: check that it is running and that its base URL in Cline's settings is right)"
	}
	return ""
}

// ShouldRetry applies the seed's retry policy to a verdict: transient provider errors and a CLI
// being updated are retried once; a timeout only when the limit is at most 120 s, so a retry
// cannot push the call past a client's own deadline; nothing else.
func ShouldRetry(v Verdict, timeoutSeconds int) bool {
	switch {
	case v.OK:
		return false
	case v.Transient, v.Kind == KindClineUpdating, v.Kind == KindTransientProviderError:
		return true
	case v.Kind == KindTimeout:
		return timeoutSeconds <= 120
	}
	return false
}
