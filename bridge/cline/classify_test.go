package cline

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Synthetic stdout lines in the shape of the recordings (docs/cline-cli.md "The JSON stream").
const (
	lineIter     = `{"ts":"t","type":"agent_event","event":{"type":"iteration_start","iteration":1}}`
	lineText     = `{"ts":"t","type":"agent_event","event":{"type":"content_end","contentType":"text","text":"PONG"}}`
	lineDone     = `{"ts":"t","type":"agent_event","event":{"type":"done","reason":"completed","text":"PONG","iterations":1,"usage":{"inputTokens":10,"outputTokens":2,"totalCost":0}}}`
	lineResultOK = `{"ts":"t","type":"run_result","finishReason":"completed","iterations":1,"usage":{"inputTokens":10,"outputTokens":2,"totalCost":0.5},"aggregateUsage":{"inputTokens":11,"outputTokens":3,"totalCost":0.5},"durationMs":5,"text":"PONG","model":{"id":"m1","provider":"p1"}}`
)

func resultError(msg string) string {
	return fmt.Sprintf(`{"ts":"t","type":"run_result","finishReason":"error","iterations":1,"durationMs":5,"text":%q,"model":{"id":"m1","provider":"p1"}}`, msg)
}

func agentError(msg, class string) string {
	return fmt.Sprintf(`{"ts":"t","type":"agent_event","event":{"type":"error","error":{"name":"Error","message":%q,"stack":"x"},"errorClass":%q,"recoverable":false,"iteration":1}}`, msg, class)
}

func jsonErr(msg string) string { return fmt.Sprintf(`{"ts":"t","type":"error","message":%q}`, msg) }

func synth(exit int, signal, stdout, stderr string) func(t *testing.T) Outcome {
	return func(t *testing.T) Outcome {
		return Outcome{
			ExitCode: exit, Signal: signal,
			Stdout: parseChunks([]byte(stdout), 0, nil), Stderr: scanStderr([]byte(stderr)),
		}
	}
}

func rec(name string, mod ...func(*Outcome)) func(t *testing.T) Outcome {
	return func(t *testing.T) Outcome {
		o := outcomeOf(recordingByName(t, name))
		for _, m := range mod {
			m(&o)
		}
		return o
	}
}

func analysis(o *Outcome) { o.Analysis = true }

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestClassify(t *testing.T) {
	tests := []struct {
		name      string
		outcome   func(t *testing.T) Outcome
		kind      Kind // "" means success
		transient bool
		text      string   // success: exact answer
		msg       []string // failure: substrings of Message
		warnings  []string // exact warnings (nil: none)
		// analysisRun marks the outcome as an analysis run.
		analysisRun bool
	}{
		// Real recordings with their real exit codes.
		{name: "a_text_pong", outcome: rec("a_text_pong"), text: "PONG"},
		{name: "a_multiturn_text", outcome: rec("a_multiturn_text"), text: "Line one.\n\nLine two with `code`.\n"},
		{name: "a_yolo_submit_and_exit", outcome: rec("a_yolo_submit_and_exit"), text: "Submission recorded (verified): Answered PONG as requested."},
		{name: "c_http_429 transient", outcome: rec("c_http_429"), kind: KindTransientProviderError, transient: true, msg: []string{"Rate limit reached for requests"}},
		{name: "c_http_429_then_ok", outcome: rec("c_http_429_then_ok"), text: "PONG"},
		{name: "d_http_500 transient", outcome: rec("d_http_500"), kind: KindTransientProviderError, transient: true, msg: []string{"The server had an error"}},
		{name: "d_http_503 transient", outcome: rec("d_http_503"), kind: KindTransientProviderError, transient: true, msg: []string{"overloaded / temporarily unavailable"}},
		{name: "e_http_401 auth", outcome: rec("e_http_401"), kind: KindNonZeroExit, msg: []string{"Incorrect API key provided", "check the provider's API key"}},
		{name: "e_connection_refused not transient", outcome: rec("e_connection_refused"), kind: KindNonZeroExit, msg: []string{"ConnectionRefused", "could not be reached"}},
		{name: "o_no_providers_json", outcome: rec("o_no_providers_json"), kind: KindNonZeroExit, msg: []string{"FailedToOpenSocket", "could not be reached"}},
		{name: "o_provider_override", outcome: rec("o_provider_override"), kind: KindNonZeroExit, msg: []string{"not found"}},
		{name: "f_hang_midstream stream cut transient", outcome: rec("f_hang_midstream_timeout_5s"), kind: KindTransientProviderError, transient: true, msg: []string{"Response stream ended without a finish reason"}},
		{name: "b_denied_tools_mistake_limit", outcome: rec("b_denied_tools_mistake_limit"), kind: KindNonZeroExit, msg: []string{"Cline aborted the run after repeated denied or failed tool calls: editor ×3", "requires approval in a TTY session"}},
		{name: "b_denied_tools_retries_1", outcome: rec("b_denied_tools_retries_1"), kind: KindNonZeroExit, msg: []string{"editor ×1"}},
		{name: "f_sigterm_then_response", outcome: rec("f_sigterm_then_response"), text: "PONG"},
		{name: "f_sigint_midrun", outcome: rec("f_sigint_midrun"), kind: KindMissingFinalResult, msg: []string{"code 0 without a final result", "agent_event/iteration_start"}},
		{name: "f_double_sigint_midrun", outcome: rec("f_double_sigint_midrun"), kind: KindMissingFinalResult},
		{name: "f_double_sigterm_midrun", outcome: rec("f_double_sigterm_midrun"), kind: KindNonZeroExit, msg: []string{"cline exited with code 1"}},
		{name: "f_hang_no_timeout_hardkill external SIGKILL", outcome: rec("f_hang_no_timeout_hardkill"), kind: KindNonZeroExit, msg: []string{"cline was terminated by SIGKILL"}},
		{name: "w_wrapper_sigterm", outcome: rec("w_wrapper_sigterm"), kind: KindNonZeroExit, msg: []string{"terminated by SIGTERM"}},
		{name: "h_hub_second_run_timeout", outcome: rec("h_hub_second_run_timeout"), kind: KindNonZeroExit, msg: []string{"Cline aborted the run", "run timed out after 5s"}},
		{name: "h_hub_second_run_sigterm", outcome: rec("h_hub_second_run_sigterm"), kind: KindNonZeroExit, msg: []string{"Cline aborted the run (local_abort: aborted)"}},
		{name: "h_hub_second_run_pong", outcome: rec("h_hub_second_run_pong"), text: "PONG"},
		{name: "g_thinking_high", outcome: rec("g_thinking_high"), text: "PONG"},
		{name: "u_single_word_prompt", outcome: rec("u_single_word_prompt"), kind: KindNonZeroExit, msg: []string{"Unknown command or unquoted prompt: PONG"}},
		{name: "u_unknown_flag", outcome: rec("u_unknown_flag"), kind: KindNonZeroExit, msg: []string{"unknown option '--bogus-flag'"}},
		{name: "u_invalid_thinking", outcome: rec("u_invalid_thinking"), kind: KindNonZeroExit, msg: []string{`invalid thinking level "extreme"`}},
		{name: "u_invalid_timeout", outcome: rec("u_invalid_timeout"), kind: KindNonZeroExit, msg: []string{`invalid timeout "0"`}},
		{name: "u_json_without_prompt", outcome: rec("u_json_without_prompt"), kind: KindNonZeroExit, msg: []string{"JSON output mode requires a prompt argument"}},
		{name: "x_tools_disabled_readonly analysis", outcome: rec("x_tools_disabled_readonly", analysis), text: "Done."},
		{name: "b_edit_autoapprove_true analysis warns", outcome: rec("b_edit_autoapprove_true", analysis), text: "Created hello.txt and updated README.md.",
			warnings: []string{"Cline reported a successful editor call during a read-only analysis run; check the working tree"}},
		{name: "b_run_commands_tool analysis warns", outcome: rec("b_run_commands_tool", analysis), text: "Ran the commands.",
			warnings: []string{"Cline reported a successful run_commands call during a read-only analysis run; check the working tree"}},
		{name: "b_edit_autoapprove_true edit run no warning", outcome: rec("b_edit_autoapprove_true"), text: "Created hello.txt and updated README.md."},

		// The bridge stopped the run.
		{name: "timeout names limit and elapsed", outcome: rec("f_sigterm_midrun", func(o *Outcome) {
			o.TimedOut, o.TimeoutSeconds, o.Elapsed = true, 30, 31200*time.Millisecond
		}), kind: KindTimeout, msg: []string{"Cline did not finish within the 30 s limit (stopped after 31.2 s)", "iteration 1"}},
		{name: "timeout without output", outcome: func(t *testing.T) Outcome {
			return Outcome{ExitCode: -1, Signal: "SIGKILL", TimedOut: true, TimeoutSeconds: 5, Elapsed: 6 * time.Second}
		}, kind: KindTimeout, msg: []string{"within the 5 s limit (stopped after 6.0 s); last activity: no output from cline"}},
		{name: "timeout after completed result is success", outcome: rec("a_text_pong", func(o *Outcome) {
			o.TimedOut, o.TimeoutSeconds, o.ExitCode, o.Signal = true, 60, -1, "SIGKILL"
		}), text: "PONG", warnings: []string{"cline did not exit after a completed result and was stopped at the 60 s limit"}},
		{name: "cancelled", outcome: rec("f_sigint_midrun", func(o *Outcome) { o.Cancelled, o.Elapsed = true, 2*time.Second }),
			kind: KindCancelled, msg: []string{"cancelled by the client (after 2.0 s)"}},
		{name: "cancelled wins over a completed result", outcome: rec("a_text_pong", func(o *Outcome) { o.Cancelled = true }), kind: KindCancelled},

		// Synthetic edge cases.
		{name: "completed then exit 1 session not found", outcome: synth(1, "", lines(lineIter, lineText, lineDone, lineResultOK), lines(jsonErr("session not found: 1796_abcde"))),
			text: "PONG", warnings: []string{"cline exited with code 1 after a completed result: session not found: 1796_abcde"}},
		{name: "completed then SIGTERM", outcome: synth(-1, "SIGTERM", lines(lineIter, lineText, lineDone, lineResultOK), ""),
			text: "PONG", warnings: []string{"cline was terminated by SIGTERM after a completed result"}},
		{name: "done completed without run_result then exit 1", outcome: synth(1, "", lines(lineIter, lineText, lineDone), "\x1b[31merror:\x1b[0m session not found: x\n"),
			text: "PONG", warnings: []string{"cline reported a completed result but no run_result line", "cline exited with code 1 after a completed result: session not found: x"}},
		{name: "exit 0 finishReason error transient", outcome: synth(0, "", lines(lineIter, agentError("HTTP 503 Service Unavailable", "unknown"), resultError("HTTP 503 Service Unavailable")), ""),
			kind: KindTransientProviderError, transient: true, msg: []string{"HTTP 503 Service Unavailable"}},
		{name: "exit 0 finishReason error non-transient", outcome: synth(0, "", lines(lineIter, agentError("model m1 does not exist", "unknown"), resultError("model m1 does not exist")), ""),
			kind: KindNonZeroExit, msg: []string{"model m1 does not exist"}},
		{name: "finishReason error with empty text uses stderr", outcome: synth(1, "", lines(lineIter, resultError("")), lines(jsonErr("status 502 from upstream"))),
			kind: KindTransientProviderError, transient: true, msg: []string{"status 502 from upstream"}},
		{name: "context window hint", outcome: synth(1, "", lines(lineIter, agentError("prompt is too long", "context_window_exceeded"), resultError("prompt is too long")), ""),
			kind: KindNonZeroExit, msg: []string{"prompt is too long", "context window"}},
		{name: "garbage stdout exit 0", outcome: synth(0, "", "PONG\nnot json either\n", ""), kind: KindMalformedJSON, msg: []string{"2 non-JSON line(s)", `"PONG"`}},
		{name: "JSON without terminal exit 0", outcome: synth(0, "", lines(lineIter, lineText), ""), kind: KindMissingFinalResult, msg: []string{"2 JSON line(s)"}},
		{name: "empty stdout exit 0", outcome: synth(0, "", "", ""), kind: KindMissingFinalResult, msg: []string{"0 JSON line(s)"}},
		{name: "MODULE_NOT_FOUND exit 1", outcome: synth(1, "", "", "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '/usr/lib/node_modules/cline/bin/cline'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n  code: 'MODULE_NOT_FOUND',\n"),
			kind: KindClineUpdating, transient: true, msg: []string{UpdatingMessage}},
		{name: "rate limit remaining info is not transient", outcome: synth(1, "", "", "rate limit remaining: 99\n"+jsonErr("invalid model id: m9")+"\n"),
			kind: KindNonZeroExit, msg: []string{"invalid model id: m9"}},
		{name: "rate limit info inside the message is not transient", outcome: synth(1, "", lines(resultError("model not allowed (x-ratelimit-remaining: 99)")), ""),
			kind: KindNonZeroExit, msg: []string{"model not allowed"}},
		{name: "exit 1 nothing at all", outcome: synth(1, "", "", ""), kind: KindNonZeroExit, msg: []string{"cline exited with code 1"}},
		{name: "exit 2 unknown stderr line", outcome: synth(2, "", "", "Segmentation fault (core dumped)\n"), kind: KindNonZeroExit, msg: []string{"cline exited with code 2; last stderr line: Segmentation fault"}},
		{name: "exit 1 stdout top-level error", outcome: synth(1, "", lines(lineIter, jsonErr("ECONNRESET while reading")), ""), kind: KindTransientProviderError, transient: true, msg: []string{"ECONNRESET"}},
		{name: "container exit 137 SIGKILL", outcome: synth(137, "SIGKILL", lines(lineIter), ""), kind: KindNonZeroExit, msg: []string{"terminated by SIGKILL"}},
		{name: "oversize final line exit 0", outcome: synth(0, "", lineIter+"\n"+`{"type":"run_result","text":"`+strings.Repeat("x", MaxLineBytes)+`"}`+"\n", ""),
			kind: KindMissingFinalResult, msg: []string{"1 stdout line(s) longer than 8 MiB were skipped"}},
		{name: "OOM killed container", outcome: func(t *testing.T) Outcome {
			o := synth(137, "SIGKILL", lines(lineIter), "")(t)
			o.OOMKilled = true
			return o
		}, kind: KindNonZeroExit, msg: []string{"memory limit"}},
		{name: "analysis failure still warns about edits", outcome: synth(1, "", lines(lineIter,
			`{"type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"editor","output":{"success":true}}}`,
			resultError("not found")), ""), analysisRun: true,
			kind: KindNonZeroExit, msg: []string{"not found"},
			warnings: []string{"Cline reported a successful editor call during a read-only analysis run; check the working tree"}},
		{name: "ANSI stripped from messages", outcome: synth(1, "", "", "\x1b[31merror:\x1b[0m error: \x1b[1mbad\x1b[0m thing\n"), kind: KindNonZeroExit, msg: []string{"bad thing"}},
	}
	if len(tests) < 30 {
		t.Fatalf("got %d rows, want at least 30", len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.outcome(t)
			o.Analysis = o.Analysis || tc.analysisRun
			v := Classify(o)
			if tc.kind == "" {
				if !v.OK || v.Kind != "" {
					t.Fatalf("got failure %s %q, want success", v.Kind, v.Message)
				}
				if v.Text != tc.text {
					t.Errorf("got text %q, want %q", v.Text, tc.text)
				}
			} else {
				if v.OK || v.Kind != tc.kind {
					t.Fatalf("got ok=%v kind %q (%q), want kind %q", v.OK, v.Kind, v.Message, tc.kind)
				}
				for _, m := range tc.msg {
					if !strings.Contains(v.Message, m) {
						t.Errorf("got message %q, want it to contain %q", v.Message, m)
					}
				}
				if strings.ContainsRune(v.Message, 0x1b) {
					t.Errorf("got message %q with an escape sequence", v.Message)
				}
			}
			if v.Transient != tc.transient {
				t.Errorf("got transient %v, want %v", v.Transient, tc.transient)
			}
			if !slices.Equal(v.Warnings, tc.warnings) {
				t.Errorf("got warnings %q, want %q", v.Warnings, tc.warnings)
			}
		})
	}
}

func TestClassifySuccessCarriesModelAndUsage(t *testing.T) {
	v := Classify(synth(0, "", lines(lineIter, lineText, lineDone, lineResultOK), "")(t))
	if v.Model != "m1" || v.Provider != "p1" {
		t.Errorf("got model %q provider %q, want m1 p1", v.Model, v.Provider)
	}
	if v.Usage == nil || v.Usage.InputTokens != 11 || v.Usage.OutputTokens != 3 || v.Usage.TotalCost != 0.5 {
		t.Errorf("got usage %+v, want the aggregateUsage 11/3/0.5", v.Usage)
	}
}

func TestClassifyAuthErrorClass(t *testing.T) {
	v := Classify(rec("e_http_401")(t))
	if v.ErrorClass != "auth" {
		t.Errorf("got errorClass %q, want auth", v.ErrorClass)
	}
	if ShouldRetry(v, 60) {
		t.Error("got retry for an auth failure, want none")
	}
}

func TestClassifyTruncatedAnswer(t *testing.T) {
	big := strings.Repeat("é", MaxTextBytes) // 2 bytes per rune: twice the cap
	stdout := fmt.Sprintf(`{"type":"run_result","finishReason":"completed","text":%q}`+"\n", big)
	v := Classify(synth(0, "", stdout, "")(t))
	if !v.OK {
		t.Fatalf("got %s %q, want success", v.Kind, v.Message)
	}
	if !strings.HasPrefix(v.Text, big[:MaxTextBytes]) || !strings.Contains(v.Text, "answer truncated") {
		t.Errorf("got text of %d bytes ending %q, want the first MiB plus a truncation note", len(v.Text), v.Text[len(v.Text)-80:])
	}
	if len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "truncated") {
		t.Errorf("got warnings %q, want one truncation warning", v.Warnings)
	}
}

func TestShouldRetry(t *testing.T) {
	tests := []struct {
		name    string
		v       Verdict
		timeout int
		want    bool
	}{
		{"success", Verdict{OK: true}, 60, false},
		{"transient", Verdict{Kind: KindTransientProviderError, Transient: true}, 300, true},
		{"updating", Verdict{Kind: KindClineUpdating, Transient: true}, 300, true},
		{"timeout 120", Verdict{Kind: KindTimeout}, 120, true},
		{"timeout 121", Verdict{Kind: KindTimeout}, 121, false},
		{"non-transient", Verdict{Kind: KindNonZeroExit}, 30, false},
		{"malformed", Verdict{Kind: KindMalformedJSON}, 30, false},
		{"missing result", Verdict{Kind: KindMissingFinalResult}, 30, false},
		{"cancelled", Verdict{Kind: KindCancelled}, 30, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShouldRetry(tc.v, tc.timeout); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKindsMatchSeed(t *testing.T) {
	want := []string{"non_zero_exit", "transient_provider_error", "timeout", "cline_updating", "cancelled",
		"launch_failed", "malformed_json", "missing_final_result", "workspace_not_git", "workspace_setup_failed",
		"workspace_cleanup_failed", "commit_created", "edits_inspection_failed",
		"budget_exceeded", "rate_limited"} // the seed's thirteen, then this bridge's spend limits and the HTTP service's admission
	var got []string
	for _, k := range Kinds {
		got = append(got, string(k))
	}
	if !slices.Equal(got, want) {
		t.Errorf("got kinds %q, want %q", got, want)
	}
}

// TestClassifyAnalysisWarningsFromRecordings: the read-only warning fires for a run_commands call
// that ran something (b_run_commands_tool, y_run_commands_mixed), not for one whose every command
// failed (y_run_commands_all_failed: a read-only run whose writes were refused), and not for a
// tool the run's policy allowed (Docker analysis keeps run_commands).
func TestClassifyAnalysisWarningsFromRecordings(t *testing.T) {
	const warn = "Cline reported a successful run_commands call during a read-only analysis run; check the working tree"
	for _, tc := range []struct {
		rec     string
		allowed []string
		want    []string
	}{
		{"b_run_commands_tool", nil, []string{warn}},
		{"y_run_commands_mixed", nil, []string{warn}},
		{"y_run_commands_all_failed", nil, nil},
		{"y_run_commands_no_shell", nil, nil},
		{"b_run_commands_tool", AnalysisTools(true), nil},
		{"y_run_commands_mixed", AnalysisTools(true), nil},
		{"b_run_commands_tool", AnalysisTools(false), []string{warn}},
	} {
		t.Run(fmt.Sprintf("%s allowed %v", tc.rec, tc.allowed), func(t *testing.T) {
			o := outcomeOf(recordingByName(t, tc.rec))
			o.Analysis, o.Allowed = true, tc.allowed
			v := Classify(o)
			if !v.OK {
				t.Fatalf("got %s %q, want success", v.Kind, v.Message)
			}
			if !slices.Equal(v.Warnings, tc.want) {
				t.Errorf("got warnings %q, want %q", v.Warnings, tc.want)
			}
		})
	}
}
