package main

import (
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// kv is one member of an ordered JSON object. The real CLI serialises with JSON.stringify, so key
// order is insertion order and must be kept exactly; Go maps cannot do that.
type kv struct {
	k string
	v any
}

// obj is an ordered JSON object.
type obj []kv

// rawJSON is emitted verbatim (it must already be valid compact JSON).
type rawJSON []byte

// appendJSON appends v like JSON.stringify would: no HTML escaping, lowercase \u00xx escapes for
// control characters, invalid UTF-8 replaced by U+FFFD (JS strings cannot hold it anyway).
func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return strconv.AppendFloat(b, x, 'f', -1, 64)
	case string:
		return appendString(b, x)
	case rawJSON:
		return append(b, x...)
	case obj:
		b = append(b, '{')
		for i, f := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, f.k)
			b = append(b, ':')
			b = appendJSON(b, f.v)
		}
		return append(b, '}')
	case []string:
		return appendArray(b, x, appendString)
	case []any:
		return appendArray(b, x, appendJSON)
	case []obj:
		return appendArray(b, x, func(b []byte, o obj) []byte { return appendJSON(b, o) })
	}
	panic("appendJSON: unsupported type")
}

// appendArray writes xs as a JSON array, each element with enc.
func appendArray[T any](b []byte, xs []T, enc func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = enc(b, x)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// isoNow is the CLI's timestamp format: ISO-8601, UTC, milliseconds.
func isoNow() string { return isoTime(time.Now()) }

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// stream serialises whole lines to one file descriptor. Every write of a line holds mu, and the
// signal handler takes mu before exiting, so a reader never sees half a line.
type stream struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// jsonLine writes {"ts":<now>, fields...} followed by a newline.
func (s *stream) jsonLine(fields obj) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := append(s.buf[:0], `{"ts":`...)
	b = appendString(b, isoNow())
	for _, f := range fields {
		b = append(b, ',')
		b = appendString(b, f.k)
		b = append(b, ':')
		b = appendJSON(b, f.v)
	}
	b = append(b, '}', '\n')
	s.buf = b
	_, _ = s.w.Write(b)
}

// text writes s verbatim.
func (s *stream) text(str string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = io.WriteString(s.w, str)
}

// raw writes b verbatim.
func (s *stream) raw(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(b)
}
