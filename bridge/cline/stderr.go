package cline

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
)

// StderrSummary is what the bridge keeps of a run's stderr (docs/cline-cli.md "stderr"): the JSON error lines
// of --json mode, the ANSI `error:` lines of argument validation, whether the CLI's files were
// missing (an update in progress), and a few other lines for diagnostics. The AI-SDK warning
// blocks printed on every model call are counted and dropped.
type StderrSummary struct {
	Lines          int      `json:"lines"`
	JSONErrors     []string `json:"jsonErrors,omitempty"` // last few {"type":"error"} messages
	TextErrors     []string `json:"textErrors,omitempty"` // last few `error:` lines, ANSI and prefix stripped
	ModuleNotFound bool     `json:"moduleNotFound,omitempty"`
	WarningLines   int      `json:"warningLines,omitempty"` // AI-SDK / Node warning blocks, stack lines included
	OtherLines     []string `json:"otherLines,omitempty"`   // last few unrecognised lines, ANSI stripped
	OversizeLines  int      `json:"oversizeLines,omitempty"`
}

// Message is the best error message stderr offers: the last JSON error, else the last `error:`
// line, else "".
func (s StderrSummary) Message() string {
	if n := len(s.JSONErrors); n > 0 {
		return s.JSONErrors[n-1]
	}
	if n := len(s.TextErrors); n > 0 {
		return s.TextErrors[n-1]
	}
	return ""
}

// StderrScanner reads a run's stderr as an io.Writer with the same concurrency contract as
// Parser: one writer (Write, Close), Summary from any goroutine.
type StderrScanner struct {
	split     lineSplitter // writer-owned
	inWarning bool         // writer-owned: inside an AI-SDK warning block

	mu sync.Mutex
	s  StderrSummary
}

// Write consumes a chunk of stderr. It never fails.
func (sc *StderrScanner) Write(b []byte) (int, error) {
	sc.split.max = MaxStderrLineBytes
	sc.split.feed(b, sc.line)
	return len(b), nil
}

// Close handles a final line that lacks its newline.
func (sc *StderrScanner) Close() error {
	sc.split.max = MaxStderrLineBytes
	sc.split.flush(sc.line)
	return nil
}

// Summary returns a snapshot that shares nothing with the scanner.
func (sc *StderrScanner) Summary() StderrSummary {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	c := sc.s
	c.JSONErrors = cloneSlice(sc.s.JSONErrors)
	c.TextErrors = cloneSlice(sc.s.TextErrors)
	c.OtherLines = cloneSlice(sc.s.OtherLines)
	return c
}

// moduleMissing are the texts Node and Bun print when the CLI's own files vanish mid-update.
var moduleMissing = []string{"MODULE_NOT_FOUND", "Cannot find module", "Cannot find package"}

func (sc *StderrScanner) line(raw []byte, oversize bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if oversize {
		sc.s.Lines++
		sc.s.OversizeLines++
		return
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		sc.inWarning = false
		return
	}
	sc.s.Lines++
	for _, m := range moduleMissing {
		if bytes.Contains(trimmed, []byte(m)) {
			sc.s.ModuleNotFound = true
		}
	}
	if trimmed[0] == '{' {
		var w struct {
			Type    string `json:"type"`
			Message any    `json:"message"`
		}
		if json.Unmarshal(trimmed, &w) == nil {
			sc.inWarning = false
			if w.Type == "error" {
				sc.s.JSONErrors = keepLast(sc.s.JSONErrors, capMessage(messageText(w.Message)))
			}
			return
		}
	}
	text := strings.TrimSpace(stripANSI(string(trimmed)))
	switch {
	case strings.HasPrefix(text, "at ") && len(raw) > 0 && (raw[0] == ' ' || raw[0] == '\t'):
		sc.s.WarningLines++ // a stack frame of a warning or a crash
		return
	case isWarningStart(text):
		sc.inWarning = true
		sc.s.WarningLines++
		return
	case sc.inWarning && (raw[0] == ' ' || raw[0] == '\t'):
		sc.s.WarningLines++
		return
	}
	sc.inWarning = false
	if msg, ok := errorLine(text); ok {
		sc.s.TextErrors = keepLast(sc.s.TextErrors, capMessage(msg))
		return
	}
	sc.s.OtherLines = keepLast(sc.s.OtherLines, capTo(text, 300))
}

// isWarningStart matches the first line of the AI-SDK / Node warning blocks (docs/cline-cli.md "stderr").
func isWarningStart(text string) bool {
	for _, p := range []string{"Warning:", "DeprecationWarning:", "ExperimentalWarning:", "(node:", "AI SDK Warning"} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// errorLine recognises `error: <msg>` (commander's own errors repeat the word:
// `error: error: unknown option '--bogus-flag'`) and returns the message.
func errorLine(text string) (string, bool) {
	const prefix = "error:"
	if !strings.HasPrefix(strings.ToLower(text), prefix) {
		return "", false
	}
	for strings.HasPrefix(strings.ToLower(text), prefix) {
		text = strings.TrimSpace(text[len(prefix):])
	}
	return text, text != ""
}
