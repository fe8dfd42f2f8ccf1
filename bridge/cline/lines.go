package cline

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Size limits of the parsers. A stdout line longer than MaxLineBytes is discarded while it
// streams (it is never buffered past the cap) and counted in Summary.OversizeLines; the real CLI
// writes one JSON object per line, and only a tool output or an answer of several MiB comes near
// the cap. Text kept in a Summary (the answer, the last assistant message) is capped at
// MaxTextBytes; error messages at MaxMessageBytes.
const (
	MaxLineBytes       = 8 << 20
	MaxStderrLineBytes = 1 << 20
	MaxTextBytes       = 1 << 20
	MaxMessageBytes    = 4 << 10
)

// maxKept bounds every "last few" list in the summaries.
const maxKept = 5

// maxDistinct bounds every list of distinct tool names.
const maxDistinct = 64

// bigBuffer is the capacity above which a line buffer is dropped after use, so one large line
// does not pin its buffer for the rest of the run.
const bigBuffer = 256 << 10

// lineSplitter cuts a byte stream into lines without bufio.Scanner's limits. It holds at most
// max bytes of a partial line; a longer line is skipped to its newline and reported once as
// oversize. Not safe for concurrent use.
type lineSplitter struct {
	max        int
	buf        []byte
	discarding bool
}

// feed passes each complete line (without "\n" or a trailing "\r") to fn. line aliases p or the
// internal buffer and is only valid during the call.
func (s *lineSplitter) feed(p []byte, fn func(line []byte, oversize bool)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if s.discarding {
				return
			}
			if len(s.buf)+len(p) > s.max {
				s.discarding = true
				s.release()
				return
			}
			s.buf = append(s.buf, p...)
			return
		}
		chunk := p[:i]
		p = p[i+1:]
		if s.discarding {
			s.discarding = false
			fn(nil, true)
			continue
		}
		line := chunk
		if len(s.buf) > 0 {
			if len(s.buf)+len(chunk) > s.max {
				s.release()
				fn(nil, true)
				continue
			}
			s.buf = append(s.buf, chunk...)
			line = s.buf
		}
		if len(line) > s.max {
			fn(nil, true)
		} else {
			fn(bytes.TrimSuffix(line, []byte{'\r'}), false)
		}
		s.release()
	}
}

// flush delivers a final unterminated line, if any.
func (s *lineSplitter) flush(fn func(line []byte, oversize bool)) {
	switch {
	case s.discarding:
		s.discarding = false
		fn(nil, true)
	case len(s.buf) > 0:
		fn(bytes.TrimSuffix(s.buf, []byte{'\r'}), false)
	}
	s.release()
}

func (s *lineSplitter) release() {
	if cap(s.buf) > bigBuffer {
		s.buf = nil
		return
	}
	s.buf = s.buf[:0]
}

// capText cuts s to at most max bytes on a UTF-8 boundary and reports how many bytes it dropped.
func capText(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], len(s) - cut
}

// capMessage cuts s to MaxMessageBytes with a visible ellipsis.
func capMessage(s string) string {
	return capTo(s, MaxMessageBytes)
}

func capTo(s string, max int) string {
	c, dropped := capText(s, max)
	if dropped == 0 {
		return c
	}
	return c + "…"
}

// truncationNote is appended to an answer cut at MaxTextBytes so the reader sees the cut.
func truncationNote(dropped int) string {
	return fmt.Sprintf("\n\n[cline-mcp: answer truncated, %d more bytes omitted]", dropped)
}

// stripANSI removes CSI and OSC escape sequences (colours, cursor moves) from s.
func stripANSI(s string) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != 0x1b {
			b = append(b, c)
			continue
		}
		if i+1 >= len(s) {
			break
		}
		switch s[i+1] {
		case '[': // CSI: parameters and intermediates, then one final byte in @..~
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
		case ']': // OSC: up to BEL or ST
			j := i + 2
			for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			if j < len(s) && s[j] == 0x1b {
				j++
			}
			i = j
		default: // two-byte escape
			i++
		}
	}
	return string(b)
}
