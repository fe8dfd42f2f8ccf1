package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// session is one run of the fake agent: it owns the ids, the counters and every line the real
// CLI would print for that run.
type session struct {
	cfg      *config
	paths    paths
	provider string
	model    string
	out      *stream
	errOut   *stream
	sig      *signals
	params   url.Values
	scenario string
	prompt   string
	attempt  int // invocation number for this state key (1-based), 0 when unused

	autoApprove bool
	disabled    map[string]bool

	agentID, taskID string
	start           time.Time
	iter            int
	inTok, outTok   int
	cost            float64 // USD so far: cost_per_call= per model call
	modelCalls      int
	waited          bool // wait_file= was honoured
}

// Usage per model call, as the recordings' fake provider reported it.
const (
	callInputTokens  = 1234
	callOutputTokens = 56
)

func randBase36(n int) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		v, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[v.Int64()]
	}
	return string(b)
}

func uuidV4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func newSession() *session {
	now := time.Now()
	return &session{
		start:   now,
		agentID: fmt.Sprintf("agent_%d_%s", now.UnixMilli(), randBase36(6)),
		taskID:  fmt.Sprintf("conv_%d_%s", now.UnixMilli()+1, randBase36(7)),
	}
}

func (s *session) param(name, def string) string {
	if v := s.params.Get(name); v != "" {
		return v
	}
	return def
}

// floatParam is a numeric param (def when absent or not a number).
func (s *session) floatParam(name string, def float64) float64 {
	if f, err := strconv.ParseFloat(s.params.Get(name), 64); err == nil {
		return f
	}
	return def
}

func (s *session) intParam(name string, def int) int {
	if n, err := strconv.Atoi(s.params.Get(name)); err == nil {
		return n
	}
	return def
}

func (s *session) hook(name string) {
	if !s.cfg.json {
		return
	}
	s.out.jsonLine(obj{{"type", "hook_event"}, {"hookEventName", name}, {"agentId", s.agentID}, {"taskId", s.taskID}, {"parentAgentId", nil}})
}

func (s *session) event(e obj) {
	if !s.cfg.json {
		return
	}
	s.out.jsonLine(obj{{"type", "agent_event"}, {"event", e}})
}

// begin prints what every run starts with (run_start only with -v).
func (s *session) begin() {
	if s.cfg.json && s.cfg.verbose {
		thinking := "off"
		if s.cfg.thinking != "" && s.cfg.thinking != "none" {
			thinking = "on"
		}
		mode := "act"
		if s.cfg.plan {
			mode = "plan"
		}
		s.out.jsonLine(obj{{"type", "run_start"}, {"providerId", s.provider}, {"modelId", s.model}, {"catalog", "live"}, {"thinking", thinking}, {"mode", mode}})
	}
	s.hook("agent_start")
}

func (s *session) iterationStart() {
	s.iter++
	s.event(obj{{"type", "iteration_start"}, {"iteration", s.iter}})
}

func (s *session) iterationEnd(calls int) {
	s.event(obj{{"type", "iteration_end"}, {"iteration", s.iter}, {"hadToolCalls", calls > 0}, {"toolCallCount", calls}})
}

const stackFrames = "\n      at iX (/$bunfs/root/chunk-c152qqqg.js:26:46952)\n      at J0 (/$bunfs/root/chunk-c152qqqg.js:26:%d)\n      at transform (/$bunfs/root/chunk-c152qqqg.js:44:43027)\n\n"

// modelResponded writes the AI-SDK warning blocks the local backend prints for every model call
// that got a response (the "Warning System" block only once per process).
func (s *session) modelResponded() {
	s.modelCalls++
	var b strings.Builder
	if s.modelCalls == 1 {
		b.WriteString("Warning: AI SDK Warning System: To turn off warning logging, set the AI_SDK_LOG_WARNINGS global to false.")
		fmt.Fprintf(&b, stackFrames, 47138)
	}
	for range 2 {
		fmt.Fprintf(&b, "DeprecationWarning: AI SDK Warning (%s.chat / %s): Deprecated: \"providerOptions key 'openai-compatible'\". Use 'openaiCompatible' instead.", s.provider, s.model)
		fmt.Fprintf(&b, stackFrames, 47251)
	}
	s.errOut.text(b.String())
}

func (s *session) usage() {
	s.inTok += callInputTokens
	s.outTok += callOutputTokens
	s.cost += s.floatParam("cost_per_call", 0)
	s.event(obj{{"type", "usage"}, {"inputTokens", callInputTokens}, {"outputTokens", callOutputTokens}, {"totalInputTokens", s.inTok}, {"totalOutputTokens", s.outTok}, {"totalCost", s.cost}})
}

func (s *session) usageObj(cache bool) obj {
	if cache {
		return obj{{"inputTokens", s.inTok}, {"outputTokens", s.outTok}, {"cacheReadTokens", 0}, {"cacheWriteTokens", 0}, {"totalCost", s.cost}}
	}
	return obj{{"inputTokens", s.inTok}, {"outputTokens", s.outTok}, {"totalCost", s.cost}}
}

// aionInfo is the catalog entry the real CLI prints for its default `cline` model.
const aionInfo = `{"id":"aion-labs/aion-3.5","name":"Aion 3.5","contextWindow":262144,"maxInputTokens":262144,"maxTokens":32768,"capabilities":["tools","reasoning","temperature","prompt-cache"],"reasoningOptions":[{"type":"effort","values":["low","high","max"]}],"pricing":{"input":3,"output":6,"cacheRead":0.75,"cacheWrite":0},"releaseDate":"2026-09-23","operation":"language"}`

func (s *session) runResult(reason, text string) {
	model := obj{{"id", s.model}, {"provider", s.provider}}
	if s.provider == "cline" && s.model == "aion-labs/aion-3.5" {
		model = append(model, kv{"info", rawJSON(aionInfo)})
	}
	s.out.jsonLine(obj{
		{"type", "run_result"}, {"finishReason", reason}, {"iterations", s.iter},
		{"usage", s.usageObj(true)}, {"aggregateUsage", s.usageObj(true)},
		{"durationMs", int(time.Since(s.start).Milliseconds())}, {"text", text}, {"model", model},
	})
}

// complete ends a run normally (text mode: the answer on stdout). A SIGTERM received during the
// run adds run_aborted local_abort after the completed result, as in f_sigterm_then_response.
func (s *session) complete(text string) int {
	s.hook("agent_end")
	if !s.cfg.json {
		s.out.text(text + "\n")
		return 0
	}
	s.event(obj{{"type", "done"}, {"reason", "completed"}, {"text", text}, {"iterations", s.iter}, {"usage", s.usageObj(false)}})
	s.runResult("completed", text)
	if s.sig.termReceived() {
		s.out.jsonLine(obj{{"type", "run_aborted"}, {"reason", "local_abort"}, {"message", "aborted"}})
	}
	return 0
}

func errorObj(msg, frames string) obj {
	return obj{{"name", "Error"}, {"message", msg}, {"stack", "Error: " + msg + frames}}
}

const (
	executeFrames = "\n    at execute (/$bunfs/root/chunk-tacx2shb.js:389:6881)\n    at processTicksAndRejections (native:7:39)"
	recordFrames  = "\n    at record (/$bunfs/root/chunk-tacx2shb.js:411:26752)\n    at <anonymous> (/$bunfs/root/chunk-tacx2shb.js:417:15774)\n    at processTicksAndRejections (native:7:39)"
)

// providerError is a model call that failed after the provider retries (c_http_429 etc.).
type providerError struct {
	message string
	class   string // "unknown" | "auth" | "context_window_exceeded"
}

var (
	err429     = providerError{"Rate limit reached for requests. Limit: 3 / min. Please try again in 20s.", "unknown"}
	err500     = providerError{"The server had an error while processing your request. Sorry about that!", "unknown"}
	err503     = providerError{"The engine is currently overloaded / temporarily unavailable, please try again later", "unknown"}
	err401     = providerError{"Incorrect API key provided: sk-test-***123. You can find your API key at https://example.invalid/api-keys.", "auth"}
	errRefused = providerError{"Cannot connect to API: Unable to connect. Is the computer able to access the url?: Unable to connect. Is the computer able to access the url? (ConnectionRefused)", "unknown"}
)

// failRun prints the provider-failure ending. exitCode is 1 for the real CLI; finish_error_exit0
// uses 0 (and then the stderr line is left out, as a CLI that "succeeded" would).
func (s *session) failRun(pe providerError, exitCode int) int {
	s.hook("agent_error")
	if !s.cfg.json {
		s.errOut.text("\x1b[31merror:\x1b[0m " + pe.message + "\n")
		return exitCode
	}
	s.event(obj{{"type", "error"}, {"error", errorObj(pe.message, executeFrames)}, {"errorClass", pe.class}, {"recoverable", false}, {"iteration", s.iter}})
	s.runResult("error", pe.message)
	if exitCode != 0 {
		s.errOut.jsonLine(obj{{"type", "error"}, {"message", pe.message}})
	}
	return exitCode
}

// abortMistakes is the consecutive-mistake limit ending (b_denied_tools_mistake_limit): exit 0.
func (s *session) abortMistakes() int {
	s.hook("agent_error")
	if !s.cfg.json {
		return 0
	}
	s.event(obj{{"type", "done"}, {"reason", "aborted"}, {"text", ""}, {"iterations", s.iter}, {"usage", s.usageObj(false)}})
	s.runResult("aborted", "")
	s.out.jsonLine(obj{{"type", "run_aborted"}, {"reason", "external_abort"}, {"message", "aborted by another client"}})
	return 0
}

// jsonError is the stderr error line of --json mode.
func (s *session) jsonError(msg string) {
	s.errOut.jsonLine(obj{{"type", "error"}, {"message", msg}})
}
