package main

import (
	"os"
	"strings"
	"time"
)

// call is one tool call the scripted model makes.
type call struct {
	tool     string // read_files | editor | run_commands
	path     string // editor: absolute path
	oldText  *string
	newText  string
	rawBytes []byte // editor: bytes written instead of newText (edit_binary)
	files    []string
	commands []string
}

func (c call) input() obj {
	switch c.tool {
	case "editor":
		in := obj{{"path", c.path}}
		if c.oldText != nil {
			in = append(in, kv{"old_text", *c.oldText})
		}
		return append(in, kv{"new_text", c.newText})
	case "read_files":
		return obj{{"files", c.files}}
	case "run_commands":
		return obj{{"commands", c.commands}}
	case "apply_patch":
		return obj{{"input", c.newText}}
	}
	return obj{}
}

// turn is one model response.
type turn struct {
	reasoning []string
	text      []string
	calls     []call
	err       *providerError
	hang      bool          // the model call never returns (SIGTERM ignored, SIGINT exits 0)
	waitTerm  bool          // the model call returns only after the first SIGTERM
	gap       time.Duration // pause before each text chunk (slow scenario)
}

func textTurn(chunks ...string) turn { return turn{text: chunks} }

// script is a scripted model conversation. When the turns run out while the last one still
// calls tools, the last turn repeats (like the recordings' fake provider) up to maxIterations,
// then the model gives up with a text answer so a run with approved tools still terminates.
type script struct {
	turns         []turn
	maxIterations int
}

// modelWait is the latency of one model call: param delay_ms (default $FAKE_CLINE_DELAY_MS, 0).
func (s *session) modelWait(t turn) {
	s.waitFile()
	if d := s.intParam("delay_ms", envInt("FAKE_CLINE_DELAY_MS", 0)); d > 0 {
		time.Sleep(time.Duration(d) * time.Millisecond)
	}
	switch {
	case t.hang:
		s.sig.blockForever()
	case t.waitTerm:
		s.sig.waitTerm(time.Duration(s.intParam("wait_ms", 60000)) * time.Millisecond)
	}
}

// waitFile holds the first model call until the file named by wait_file= exists (a test's
// release signal); signals keep working meanwhile.
func (s *session) waitFile() {
	p := s.param("wait_file", "")
	if p == "" || s.waited {
		return
	}
	s.waited = true
	for {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// linger is the CLI's time between the final answer and the end of the run: param linger_ms
// (default 0). A test that wants the answer's progress notification to go out before the result
// gives it longer than the bridge's progress throttle.
func (s *session) linger() {
	if d := s.intParam("linger_ms", 0); d > 0 {
		time.Sleep(time.Duration(d) * time.Millisecond)
	}
}

// run plays the script and returns the exit code.
func (s *session) run(sc script) int {
	if sc.maxIterations == 0 {
		sc.maxIterations = s.intParam("max_iterations", 10)
	}
	s.begin()
	mistakes := 0
	for i := 0; ; i++ {
		var t turn
		switch {
		case i < len(sc.turns):
			t = sc.turns[i]
		case len(sc.turns) > 0 && len(sc.turns[len(sc.turns)-1].calls) > 0 && i < sc.maxIterations:
			t = sc.turns[len(sc.turns)-1]
		default:
			t = textTurn("Stopped after repeated tool calls.")
		}
		s.iterationStart()
		s.modelWait(t)
		if t.err != nil {
			return s.failRun(*t.err, 1)
		}
		s.modelResponded()
		text := s.stream(t)
		if len(t.calls) == 0 {
			s.linger()
			s.iterationEnd(0)
			return s.complete(text)
		}
		failures := s.runCalls(t.calls)
		s.iterationEnd(len(t.calls))
		if len(failures) == 0 {
			mistakes = 0
			continue
		}
		msg := itoa(len(failures)) + " tool call(s) failed: " + strings.Join(failures, "; ")
		s.event(obj{{"type", "error"}, {"error", errorObj(msg, recordFrames)}, {"recoverable", true}, {"iteration", s.iter}})
		mistakes++
		if mistakes >= s.cfg.mistakeLimit() {
			return s.abortMistakes()
		}
	}
}

// stream emits reasoning and text deltas, usage and the content_end lines of one response, in the
// recorded order (text end before reasoning end), and returns the full text.
func (s *session) stream(t turn) string {
	var reasoning, acc strings.Builder
	for _, r := range t.reasoning {
		reasoning.WriteString(r)
		s.event(obj{{"type", "content_start"}, {"contentType", "reasoning"}, {"reasoning", r}, {"redacted", false}})
	}
	for _, c := range t.text {
		if t.gap > 0 {
			time.Sleep(t.gap)
		}
		acc.WriteString(c)
		s.event(obj{{"type", "content_start"}, {"contentType", "text"}, {"text", c}, {"accumulated", acc.String()}})
	}
	s.usage()
	if len(t.text) > 0 {
		s.event(obj{{"type", "content_end"}, {"contentType", "text"}, {"text", acc.String()}})
	}
	if len(t.reasoning) > 0 {
		s.event(obj{{"type", "content_end"}, {"contentType", "reasoning"}, {"reasoning", reasoning.String()}})
	}
	return acc.String()
}

// chunks splits s into pieces of n bytes (on rune boundaries), like a streaming provider.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut < len(s) && s[cut]&0xc0 == 0x80 {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}
