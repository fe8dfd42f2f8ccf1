package egress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// BudgetRefusal starts the reason of a provider request the proxy refused because the run's
// allowance (Credential.Allowance) was spent; Count.Budget marks such refusals.
const BudgetRefusal = "over the call's spend limit"

// Allowance is what a run may spend with the credential the proxy lends it, derived from the
// call's limits (maxIterations, maxCostUsd). Zero fields set no limit. Once a limit is reached
// the proxy refuses the run's next provider requests (403, counted with Count.Budget).
type Allowance struct {
	// Requests is how many provider requests may be answered with success (2xx); an
	// unsuccessful answer is not billed by a provider and does not count.
	Requests int `json:"requests,omitempty"`
	// CostUSD is the most the run's tokens may cost, priced at InputUSDPerMTok and
	// OutputUSDPerMTok (USD per million tokens; prompt caching writes count 1.25 times, reads
	// once, as input — never less than a provider bills).
	CostUSD          float64 `json:"costUsd,omitempty"`
	InputUSDPerMTok  float64 `json:"inputUsdPerMTok,omitempty"`
	OutputUSDPerMTok float64 `json:"outputUsdPerMTok,omitempty"`
	// Limits names where the numbers come from, for the refusal ("maxIterations 1 + 2 for
	// retries", "maxCostUsd $0.0100 at $15/$75 per million tokens").
	Limits string `json:"limits,omitempty"`
}

// spend is what a run's provider requests used so far.
type spend struct {
	answered          int   // 2xx answers
	input, output     int64 // tokens as the answers' usage reported them
	cacheWrite, estIn int64 // cache writes; input estimated from bytes when no usage came
	estOut, noUsage   int64 // output estimated likewise; answers without usage
	allowance         Allowance
	over              string // the refusal reason once a limit is reached
}

func (s *spend) cost() float64 {
	in := float64(s.input+s.estIn) + 1.25*float64(s.cacheWrite)
	out := float64(s.output + s.estOut)
	return (in*s.allowance.InputUSDPerMTok + out*s.allowance.OutputUSDPerMTok) / 1e6
}

// check sets over when a limit is reached and returns it.
func (s *spend) check() string {
	a := s.allowance
	switch {
	case s.over != "":
	case a.Requests > 0 && s.answered >= a.Requests:
		s.over = fmt.Sprintf("%s: the proxy counted %s, the most the call allows (%s)", BudgetRefusal, answers(s.answered), a.Limits)
	case a.CostUSD > 0 && s.cost() >= a.CostUSD:
		s.over = fmt.Sprintf("%s: the proxy counted %s with %d input and %d output tokens (%d more estimated from bytes), at most $%.4f, reaching maxCostUsd $%.4f (%s)",
			BudgetRefusal, answers(s.answered), s.input+s.cacheWrite, s.output, s.estIn+s.estOut, s.cost(), a.CostUSD, a.Limits)
	}
	return s.over
}

// answers is "1 provider answer" or "n provider answers".
func answers(n int) string {
	if n == 1 {
		return "1 provider answer"
	}
	return fmt.Sprintf("%d provider answers", n)
}

// usage is the token counts one answer reported (the largest of each seen: streams repeat
// running totals).
type usage struct {
	input, output, cacheWrite int64
	seen                      bool
}

// take reads the usage objects of one JSON document (a whole answer, or one SSE event): at the
// top, under "message" (Anthropic's message_start) or "response" (OpenAI's response.completed).
func (u *usage) take(doc []byte) {
	var d struct {
		Usage    *rawUsage                 `json:"usage"`
		Message  struct{ Usage *rawUsage } `json:"message"`
		Response struct{ Usage *rawUsage } `json:"response"`
	}
	if json.Unmarshal(doc, &d) != nil {
		return
	}
	for _, r := range []*rawUsage{d.Usage, d.Message.Usage, d.Response.Usage} {
		if r == nil {
			continue
		}
		u.seen = true
		u.input = max(u.input, r.InputTokens+r.CacheRead, r.PromptTokens)
		u.output = max(u.output, r.OutputTokens, r.CompletionTokens)
		u.cacheWrite = max(u.cacheWrite, r.CacheWrite)
	}
}

// rawUsage is both shapes: Anthropic's and OpenAI Responses' input/output tokens, OpenAI chat's
// prompt/completion tokens.
type rawUsage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheWrite       int64 `json:"cache_creation_input_tokens"`
	CacheRead        int64 `json:"cache_read_input_tokens"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// maxUsageDoc bounds what the proxy keeps of a JSON answer or an SSE line to read its usage.
const maxUsageDoc = 4 << 20

// usageReader passes an answer body through unchanged and reads its usage on the way: a JSON
// answer whole at its end, an SSE stream event by event. When the body ends (or is closed) it
// calls done with what it found and the bytes it passed.
type usageReader struct {
	r     io.ReadCloser
	sse   bool
	doc   bytes.Buffer
	u     usage
	bytes int64
	done  func(usage, int64)
	ended bool
}

func newUsageReader(r io.ReadCloser, contentType string, done func(usage, int64)) *usageReader {
	mt, _, _ := mime.ParseMediaType(contentType)
	return &usageReader{r: r, sse: mt == "text/event-stream", done: done}
}

func (u *usageReader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	u.bytes += int64(n)
	if u.sse {
		u.sseLines(p[:n])
	} else if u.doc.Len()+n <= maxUsageDoc {
		u.doc.Write(p[:n])
	}
	if err != nil {
		u.finish()
	}
	return n, err
}

// sseLines reads the usage of every complete "data:" line.
func (u *usageReader) sseLines(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if u.doc.Len()+len(b) <= maxUsageDoc {
				u.doc.Write(b)
			}
			return
		}
		u.doc.Write(b[:i])
		if line, ok := bytes.CutPrefix(bytes.TrimSpace(u.doc.Bytes()), []byte("data:")); ok {
			u.u.take(bytes.TrimSpace(line))
		}
		u.doc.Reset()
		b = b[i+1:]
	}
}

func (u *usageReader) finish() {
	if u.ended {
		return
	}
	u.ended = true
	if !u.sse {
		u.u.take(u.doc.Bytes())
	}
	u.done(u.u, u.bytes)
}

func (u *usageReader) Close() error {
	u.finish()
	return u.r.Close()
}

// spendOf is the run's spend, or nil when its grant has no allowance (caller holds p.mu).
func (g *grant) spendOf() *spend {
	if g == nil || g.cred == nil {
		return nil
	}
	return g.cred.spend
}

// overBudget returns the refusal reason when token's allowance is spent, else "".
func (p *Proxy) overBudget(token string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.grants[token].spendOf(); s != nil {
		return s.check()
	}
	return ""
}

// meter wraps a credential answer's body so that what it used counts against token's allowance:
// its usage when it reports one, else an estimate of a token per two bytes of the request
// (reqBytes, read when the answer ends) and of the answer.
func (p *Proxy) meter(token string, resp *http.Response, reqBytes func() int64) {
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if ok {
		p.mu.Lock()
		if s := p.grants[token].spendOf(); s != nil {
			s.answered++
		}
		p.mu.Unlock()
	}
	resp.Body = newUsageReader(resp.Body, resp.Header.Get("Content-Type"), func(u usage, n int64) {
		p.mu.Lock()
		defer p.mu.Unlock()
		s := p.grants[token].spendOf()
		switch {
		case s == nil:
		case u.seen:
			s.input += u.input
			s.output += u.output
			s.cacheWrite += u.cacheWrite
		case ok:
			s.noUsage++
			s.estIn += reqBytes() / 2
			s.estOut += n / 2
		}
	})
}
