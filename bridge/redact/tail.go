package redact

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// DefaultTailChars is the tail length NewTail uses for maxChars 0: the
// seed's "last ~2,000 characters".
const DefaultTailChars = 2000

// Streaming limits. A line longer than chunkCap bytes is redacted in pieces
// of chunkCap-overlap bytes: the last overlap bytes stay pending, so a secret
// of up to overlap bytes that crosses a piece boundary is still seen whole,
// and ctxLen already-emitted bytes are kept as left context (the "apiKey":
// or "Bearer " in front of a value). A secret longer than overlap inside
// such a line is still redacted from its start to the piece boundary, but
// its far end may escape detection; its prefix never appears.
const (
	chunkCap = 64 << 10
	overlap  = 4 << 10
	ctxLen   = 1 << 10
)

// probe is appended to an unfinished line before it is shown, so a token
// still being written ("sk-ab", "API_KEY=x") is judged as if it went on.
var probe = []byte(strings.Repeat("0A", 20))

// Tail is an io.Writer that redacts a stream line by line at the Diagnostic
// level (it holds stdout/stderr tails) and keeps the
// last maxChars runes of the redacted result. Memory is bounded by a small
// constant (about 64 KiB of pending line plus a few times maxChars) however
// much is written. Invalid UTF-8 is shown as U+FFFD.
//
// One goroutine may Write while others call String and Bytes.
type Tail struct {
	r   *Redactor
	max int

	total atomic.Int64

	mu sync.Mutex
	// pend holds the unfinished line; pend[:ctx] was already emitted and
	// is kept only as left context.
	pend  []byte
	ctx   int
	carry carry
	spans []span // scratch
	buf   []byte // scratch for rendered pieces
	again scratch

	// out holds the redacted tail as valid UTF-8 from outStart: at least
	// the last max runes (4*max bytes always hold them), cut to runes only
	// when read, so writing never counts runes.
	out      []byte
	outStart int
	fix      []byte // scratch for a piece with invalid UTF-8
}

// carry is what one rendered piece tells the next piece of the same line
// (forced, markerOpen) or the next lines (inPEM).
type carry struct {
	forced     int  // bytes after the cut that belong to a secret already being redacted
	markerOpen bool // the piece ended inside a redacted span
	inPEM      bool // inside a private key block whose END line has not come yet
}

// NewTail returns an empty Tail keeping the last maxChars runes (0 means
// DefaultTailChars).
func (r *Redactor) NewTail(maxChars int) *Tail {
	if maxChars <= 0 {
		maxChars = DefaultTailChars
	}
	return &Tail{r: r, max: maxChars, pend: make([]byte, 0, chunkCap)}
}

// Write consumes p. It never fails and never keeps a reference to p.
func (t *Tail) Write(p []byte) (int, error) {
	n := len(p)
	t.total.Add(int64(n))
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.feed(p)
			break
		}
		if len(t.pend) == 0 && i <= chunkCap {
			// All complete lines that fit in one chunk, rendered at once
			// (no detector reaches across a line end, so this is the same
			// as one line at a time, only faster).
			i = bytes.LastIndexByte(p[:min(len(p), chunkCap+1)], '\n')
			t.endLine(p[:i], 0, true)
		} else {
			t.feed(p[:i])
			t.endLine(t.pend, t.ctx, true)
		}
		p = p[i+1:]
	}
	return n, nil
}

// Flush ends the unfinished last line as if the stream had ended there, so
// String shows it exactly rather than judging its last word as unfinished.
// Call it once the writer is done; later writes start a new line.
func (t *Tail) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pend) > t.ctx || t.carry.forced > 0 {
		t.endLine(t.pend, t.ctx, false)
	}
}

// Bytes returns the number of bytes written so far (before redaction).
func (t *Tail) Bytes() int64 { return t.total.Load() }

// String returns the redacted tail: at most maxChars runes, ending with
// the unfinished last line, redacted as if it continued with more token
// characters so that no part of a secret still being written is shown.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := lastRunes(t.out[t.outStart:], t.max)
	if len(t.pend) == t.ctx && t.carry.forced == 0 {
		return string(live)
	}
	b := append(bytes.Clone(t.pend), probe...)
	piece, _ := t.render(nil, b, t.ctx, len(t.pend), t.unfinished(t.pend))
	piece = validUTF8(piece)
	n := utf8.RuneCount(piece)
	if n >= t.max {
		return string(lastRunes(piece, t.max))
	}
	return string(lastRunes(live, t.max-n)) + string(piece)
}

// unfinished returns spans that cover what may be a secret still being
// written at the end of the pending line b, besides what the probe finds:
// whatever a scan of b as it stands finds (a fixed-length key the probe
// would lengthen past its rule), the start of a known literal (at least 4
// bytes of it) and the password of a URL whose '@' has not come yet.
func (t *Tail) unfinished(b []byte) []span {
	sp, _ := t.r.scan(b, nil, Diagnostic)
	if t.r != nil {
	lits:
		for _, lit := range t.r.literals {
			for k := min(len(lit)-1, len(b)); k >= 4; k-- {
				if bytes.HasSuffix(b, lit[:k]) {
					sp = append(sp, span{len(b) - k, len(b)})
					break lits
				}
			}
		}
	}
	if k := bytes.LastIndex(b, []byte("://")); k >= 0 {
		rest := b[k+3:]
		if c := bytes.IndexByte(rest, ':'); c >= 0 && bytes.IndexAny(rest, "/@ \t\"'") < 0 {
			sp = append(sp, span{k + 3 + c + 1, len(b)})
		}
	}
	return sp
}

// feed appends data to the unfinished line, rendering pieces of long lines.
func (t *Tail) feed(data []byte) {
	for len(data) > 0 {
		n := min(len(data), chunkCap-len(t.pend))
		t.pend = append(t.pend, data[:n]...)
		data = data[n:]
		if len(t.pend) >= chunkCap {
			t.flushPiece()
		}
	}
}

// flushPiece renders the pending line up to overlap bytes before its end
// and keeps the rest, plus ctxLen bytes of context, for the next piece.
func (t *Tail) flushPiece() {
	b := t.pend
	cut := len(b) - overlap
	for k := 0; k < utf8.UTFMax && cut > t.ctx && !utf8.RuneStart(b[cut]); k++ {
		cut--
	}
	var c carry
	t.buf, c = t.render(t.buf[:0], b, t.ctx, cut, nil)
	t.appendOut(t.buf)
	keep := max(0, cut-ctxLen)
	t.pend = t.pend[:copy(t.pend, b[keep:])]
	t.ctx = cut - keep
	t.carry = c
}

// endLine renders line[from:] (line may be t.pend) as the end of a line
// and resets the per-line state.
func (t *Tail) endLine(line []byte, from int, newline bool) {
	var c carry
	t.buf, c = t.render(t.buf[:0], line, from, len(line), nil)
	if newline {
		t.buf = append(t.buf, '\n')
	}
	t.appendOut(t.buf)
	t.pend, t.ctx = t.pend[:0], 0
	t.carry = carry{inPEM: c.inPEM}
}

// render appends the redaction of b[from:cut] to dst, where b[:from] is
// context already emitted and b[cut:] is not yet emitted, and returns the
// carry for the piece starting at cut. It reads but does not change t's
// per-line state.
func (t *Tail) render(dst, b []byte, from, cut int, extra []span) ([]byte, carry) {
	sp := append(t.spans[:0], extra...)
	if t.carry.forced > 0 {
		sp = append(sp, span{from, min(len(b), from+t.carry.forced)})
	}
	inPEM := t.carry.inPEM
	if inPEM {
		if y := bytes.Index(b[from:], []byte("-----END")); y >= 0 {
			sp = pemLines(b, from, from+y, sp)
			inPEM = false
		} else {
			sp = pemLines(b, from, len(b), sp)
		}
	}
	sp, open := t.r.scan(b, sp, Diagnostic)
	t.spans = sp
	c := carry{inPEM: inPEM || open}
	for _, x := range sp {
		if x.s < cut && x.e >= cut && x.e > from {
			c.markerOpen = true
			c.forced = max(c.forced, x.e-cut)
		}
	}
	n := len(dst)
	dst = apply(dst, b, sp, from, cut, t.carry.markerOpen)
	if len(sp) > 0 {
		// Settle what only shows once a neighbour is replaced; see Redactor.redact.
		if again, changed := t.r.redactWith(dst[n:], Diagnostic, &t.again); changed {
			dst = append(dst[:n], again...)
		}
	}
	return dst, c
}

// appendOut adds a rendered piece to the tail, dropping bytes from the
// front beyond the 4*max that always hold the last max runes.
func (t *Tail) appendOut(piece []byte) {
	if len(piece) == 0 {
		return
	}
	if !utf8.Valid(piece) {
		t.fix = appendValidUTF8(t.fix[:0], piece)
		piece = t.fix
	}
	keep := 4 * t.max
	if len(piece) >= keep {
		t.out = append(t.out[:0], lastRunes(piece, t.max)...)
		t.outStart = 0
		return
	}
	t.out = append(t.out, piece...)
	if s := len(t.out) - keep; s > t.outStart {
		for !utf8.RuneStart(t.out[s]) {
			s++
		}
		t.outStart = s
	}
	if t.outStart > 2*keep {
		t.out = t.out[:copy(t.out, t.out[t.outStart:])]
		t.outStart = 0
	}
}

// appendValidUTF8 appends b to dst with each invalid byte sequence
// replaced by U+FFFD, as bytes.ToValidUTF8 does, without allocating
// beyond dst.
func appendValidUTF8(dst, b []byte) []byte {
	invalid := false // previous byte was from an invalid sequence
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			invalid = false
			continue
		}
		_, w := utf8.DecodeRune(b[i:])
		if w == 1 {
			if !invalid {
				dst = append(dst, "\uFFFD"...)
				invalid = true
			}
			i++
			continue
		}
		dst = append(dst, b[i:i+w]...)
		i += w
		invalid = false
	}
	return dst
}

// lastRunes returns the suffix of valid UTF-8 b holding its last n runes.
func lastRunes(b []byte, n int) []byte {
	i := len(b)
	for ; n > 0 && i > 0; n-- {
		_, w := utf8.DecodeLastRune(b[:i])
		i -= w
	}
	return b[i:]
}

func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}
