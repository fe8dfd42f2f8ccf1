package egress

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// usageAnswers are the answers of the three API shapes with usage: OpenAI chat completions as
// JSON, Anthropic messages as SSE (input at message_start, the output's running total at
// message_delta), OpenAI Responses as SSE (response.completed). Each reports 600 tokens in all.
var usageAnswers = map[string]struct{ ctype, body string }{
	"openai json": {"application/json", `{"id":"x","choices":[],"usage":{"prompt_tokens":400,"completion_tokens":200,"total_tokens":600}}`},
	"anthropic sse": {"text/event-stream", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":300,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":150}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":200}}\n\n"},
	"responses sse": {"text/event-stream; charset=utf-8", "data: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n" +
		"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":400,\"output_tokens\":200}}}\n\ndata: [DONE]\n\n"},
	"openai sse": {"text/event-stream", "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":400,\"completion_tokens\":200}}\n\ndata: [DONE]\n\n"},
}

// TestAllowanceCountsUsage: the proxy reads each answer's usage (JSON, and SSE in the Anthropic,
// Responses and chat shapes) and, once the tokens priced at the grant's rates reach the call's
// cost limit, refuses the run's next provider requests with a budget refusal that says what it
// counted; those requests never reach the upstream. With 600 tokens an answer at $10 per million
// and a limit of $0.01 (1000 tokens), two answers go through and the third request is refused.
func TestAllowanceCountsUsage(t *testing.T) {
	for name, a := range usageAnswers {
		t.Run(name, func(t *testing.T) {
			w := newKeyWorld(t, func(rw http.ResponseWriter, r *http.Request) {
				rw.Header().Set("Content-Type", a.ctype)
				fl := rw.(http.Flusher)
				for _, part := range strings.SplitAfter(a.body, "\n") { // line by line, as a stream
					fmt.Fprint(rw, part)
					fl.Flush()
				}
			}, Allowance{CostUSD: 0.01, InputUSDPerMTok: 10, OutputUSDPerMTok: 10, Limits: "test"})
			for i := 0; i < 2; i++ {
				if code, _, _ := w.send(t, "POST", "/v1/chat/completions"); code != 200 {
					t.Fatalf("request %d within the allowance got %d", i+1, code)
				}
			}
			code, _, body := w.send(t, "POST", "/v1/chat/completions")
			if code != http.StatusForbidden || !strings.Contains(body, BudgetRefusal) || !strings.Contains(body, "with 800 input and 400 output tokens") {
				t.Errorf("past the allowance: got %d %q, want a budget refusal counting 1200 tokens", code, body)
			}
			if n := len(w.seen()); n != 2 {
				t.Errorf("the upstream saw %d requests, want 2", n)
			}
			sum := w.p.Revoke("run")
			if len(sum.Refused) != 1 || !sum.Refused[0].Budget || sum.Refused[0].Count != 1 {
				t.Errorf("refusals %+v, want one budget refusal", sum.Refused)
			}
			if sum.Answers != 2 || sum.SpentUSD < 0.01199 || sum.SpentUSD > 0.01201 {
				t.Errorf("summary counted %d answers for $%f, want 2 for $0.012", sum.Answers, sum.SpentUSD)
			}
		})
	}
}

// TestAllowanceCountsRequests: a request allowance counts successful answers only (a 429 or 5xx
// is not billed), and answers without usage are still priced from their bytes.
func TestAllowanceCountsRequests(t *testing.T) {
	fail := true
	w := newKeyWorld(t, func(rw http.ResponseWriter, r *http.Request) {
		if fail {
			fail = false
			http.Error(rw, "busy", http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(rw, `{"no":"usage"}`)
	}, Allowance{Requests: 2, Limits: "maxIterations 0 + 2"})
	var codes []int
	for i := 0; i < 4; i++ {
		code, _, _ := w.send(t, "POST", "/v1/chat/completions")
		codes = append(codes, code)
	}
	if fmt.Sprint(codes) != "[429 200 200 403]" {
		t.Errorf("codes %v, want a 429 that does not count, two answers, then a refusal", codes)
	}
	w.p.mu.Lock()
	s := *w.p.grants["run"].cred.spend
	w.p.mu.Unlock()
	if s.answered != 2 || s.noUsage != 2 || s.estOut == 0 || s.estIn == 0 {
		t.Errorf("spend %+v, want two answers without usage estimated from their bytes", s)
	}
}

// TestSettle: a settle returns what the run did since the last one and counts anew; without a
// credential the run's provider requests get none (refused, never reaching the upstream) until
// the next settle lends one again with a fresh allowance.
func TestSettle(t *testing.T) {
	w := newKeyWorld(t, nil, Allowance{Requests: 1, Limits: "one per turn"})
	send := func() int { code, _, _ := w.send(t, "POST", "/v1/chat/completions"); return code }
	if a, b := send(), send(); a != 200 || b != http.StatusForbidden {
		t.Fatalf("turn 1: got %d then %d, want an answer then the allowance's refusal", a, b)
	}
	sum, err := w.p.Settle("run", nil)
	if err != nil || sum.Answers != 1 || len(sum.Refused) != 1 || !sum.Refused[0].Budget {
		t.Fatalf("turn 1's settle: %+v %v, want one answer and one budget refusal", sum, err)
	}
	if code := send(); code == 200 {
		t.Fatalf("between turns a provider request got %d: the key was lent", code)
	}
	sum, err = w.p.Settle("run", w.cred)
	if err != nil || sum.Answers != 0 || len(sum.Refused) != 1 || sum.Refused[0].Budget {
		t.Fatalf("the idle time's settle: %+v %v, want the one refusal of a request without a credential", sum, err)
	}
	if code := send(); code != 200 {
		t.Fatalf("turn 2 with a fresh allowance got %d", code)
	}
	if n := len(w.seen()); n != 2 {
		t.Errorf("the upstream saw %d requests, want 2 (one per turn)", n)
	}
	if _, err := w.p.Settle("other", nil); err == nil {
		t.Error("a run that was not granted was settled")
	}
	if sum := w.p.Revoke("run"); sum.Answers != 1 || len(sum.Refused) != 0 {
		t.Errorf("the revoke after the settle: %+v, want turn 2's one answer", sum)
	}
}

// TestAllowListOrderDoesNotMatter: an exact name on the allow-list reaches its private address
// whether a wildcard of its domain (public addresses only) comes before or after it, and the
// wildcard still keeps other names of the domain off private addresses.
func TestAllowListOrderDoesNotMatter(t *testing.T) {
	private := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
	}
	for _, list := range [][]string{
		{"*.lab.example:8443", "tgt.lab.example:8443"},
		{"tgt.lab.example:8443", "*.lab.example:8443"},
		{"*.example:8443", "*.lab.example:8443", "tgt.lab.example:8443"},
	} {
		p := &Proxy{Resolve: private}
		p.Grant("run", list)
		for target, want := range map[string]string{"tgt.lab.example:8443": "tgt.lab.example:8443", "other.lab.example:8443": "*.lab.example:8443"} {
			tp, _ := parseTarget(target, "https")
			rule, reason := p.rule("run", tp)
			if reason != "" || rule.String() != want {
				t.Errorf("%v: %s matched %s (%s), want %s", list, target, rule, reason, want)
				continue
			}
			addrs, why := p.addresses(context.Background(), rule, tp)
			if ok := len(addrs) == 1; ok != (want == target) {
				t.Errorf("%v: %s reached %v (%s)", list, target, addrs, why)
			}
		}
	}
}
