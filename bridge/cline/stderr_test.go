package cline

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestStderrScanner(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		json     []string
		text     []string
		other    []string
		module   bool
		warnings int
		message  string
	}{
		{name: "JSON error", in: `{"ts":"x","type":"error","message":"Rate limit reached"}` + "\n",
			json: []string{"Rate limit reached"}, message: "Rate limit reached"},
		{name: "ANSI error with continuation", in: "\x1b[31merror:\x1b[0m Unknown command or unquoted prompt: PONG\nPrompt text must be passed as a single quoted argument.\n",
			text: []string{"Unknown command or unquoted prompt: PONG"}, other: []string{"Prompt text must be passed as a single quoted argument."},
			message: "Unknown command or unquoted prompt: PONG"},
		{name: "commander double prefix", in: "\x1b[31merror:\x1b[0m error: unknown option '--bogus-flag'\n",
			text: []string{"unknown option '--bogus-flag'"}, message: "unknown option '--bogus-flag'"},
		{name: "JSON wins over text", in: "\x1b[31merror:\x1b[0m first\n" + `{"type":"error","message":"second"}` + "\n",
			json: []string{"second"}, text: []string{"first"}, message: "second"},
		{name: "AI-SDK warning blocks ignored",
			in: "Warning: AI SDK Warning System: To turn off warning logging, set the AI_SDK_LOG_WARNINGS global to false.\n" +
				"      at iX (/$bunfs/root/chunk-c152qqqg.js:26:46952)\n      at J0 (/$bunfs/root/chunk-c152qqqg.js:26:47138)\n\n" +
				"DeprecationWarning: AI SDK Warning (openai-compatible.chat / fake-model): Deprecated: \"providerOptions key 'openai-compatible'\". Use 'openaiCompatible' instead.\n" +
				"      at iX (/$bunfs/root/chunk-c152qqqg.js:26:46952)\n\n",
			warnings: 5},
		{name: "module not found", in: "Error: Cannot find module '/usr/lib/node_modules/cline/bin/cline'\n    at Module._resolveFilename (node:internal)\n  code: 'MODULE_NOT_FOUND',\n",
			text: []string{"Cannot find module '/usr/lib/node_modules/cline/bin/cline'"}, other: []string{"code: 'MODULE_NOT_FOUND',"}, module: true, warnings: 1,
			message: "Cannot find module '/usr/lib/node_modules/cline/bin/cline'"},
		{name: "bun module error", in: "error: Cannot find module \"./chunk-x.js\" from \"/$bunfs/root/cline\"\n", module: true,
			text: []string{`Cannot find module "./chunk-x.js" from "/$bunfs/root/cline"`}, message: `Cannot find module "./chunk-x.js" from "/$bunfs/root/cline"`},
		{name: "other JSON ignored", in: `{"type":"info","message":"hello"}` + "\n"},
		{name: "informational lines are other", in: "rate limit remaining: 99\n", other: []string{"rate limit remaining: 99"}},
		{name: "unterminated", in: "\x1b[31merror:\x1b[0m no newline", text: []string{"no newline"}, message: "no newline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{0, 1, 5} {
				var sc StderrScanner
				in := []byte(tc.in)
				for len(in) > 0 {
					n := len(in)
					if size > 0 {
						n = min(n, size)
					}
					sc.Write(in[:n])
					in = in[n:]
				}
				sc.Close()
				s := sc.Summary()
				if !slices.Equal(s.JSONErrors, tc.json) || !slices.Equal(s.TextErrors, tc.text) || !slices.Equal(s.OtherLines, tc.other) {
					t.Errorf("chunk %d: got json %q text %q other %q, want %q %q %q", size, s.JSONErrors, s.TextErrors, s.OtherLines, tc.json, tc.text, tc.other)
				}
				if s.ModuleNotFound != tc.module || s.WarningLines != tc.warnings {
					t.Errorf("chunk %d: got module %v warnings %d, want %v %d", size, s.ModuleNotFound, s.WarningLines, tc.module, tc.warnings)
				}
				if s.Message() != tc.message {
					t.Errorf("chunk %d: got message %q, want %q", size, s.Message(), tc.message)
				}
			}
		})
	}
}

func TestStderrScannerBounded(t *testing.T) {
	var sc StderrScanner
	for i := range 10000 {
		fmt.Fprintf(&sc, "{\"type\":\"error\",\"message\":\"e%d\"}\n\x1b[31merror:\x1b[0m t%d\nother %d\n", i, i, i)
	}
	sc.Write([]byte(`{"type":"error","message":"` + strings.Repeat("m", 3*MaxStderrLineBytes) + "\"}\n"))
	sc.Write([]byte(`{"type":"error","message":"` + strings.Repeat("m", MaxStderrLineBytes/2) + "\"}\n"))
	sc.Close()
	s := sc.Summary()
	if len(s.JSONErrors) != maxKept || len(s.TextErrors) != maxKept || len(s.OtherLines) != maxKept {
		t.Errorf("got %d/%d/%d kept, want %d each", len(s.JSONErrors), len(s.TextErrors), len(s.OtherLines), maxKept)
	}
	if s.OversizeLines != 1 || s.Lines != 30002 {
		t.Errorf("got oversize %d lines %d, want 1 and 30002", s.OversizeLines, s.Lines)
	}
	if last := s.JSONErrors[maxKept-1]; len(last) > MaxMessageBytes+len("…") || !strings.HasSuffix(last, "…") {
		t.Errorf("got last message of %d bytes, want it capped at %d with an ellipsis", len(last), MaxMessageBytes)
	}
}

func TestStripANSI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\x1b[31merror:\x1b[0m x", "error: x"},
		{"\x1b[2m[thinking] \x1b[0mhmm", "[thinking] hmm"},
		{"\x1b]8;;http://x\x07link\x1b]8;;\x07", "link"},
		{"\x1b]0;title\x1b\\rest", "rest"},
		{"plain", "plain"},
		{"trailing\x1b", "trailing"},
		{"\x1b[1;32;48;5;10mcolour\x1b[K", "colour"},
	}
	for _, tc := range tests {
		if got := stripANSI(tc.in); got != tc.want {
			t.Errorf("stripANSI(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}
